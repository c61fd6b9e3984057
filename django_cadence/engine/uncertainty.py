"""A running try marks its attempt uncertain before a step that must not repeat.

The mark is a fenced write (invariant 3) committed before ``mark_uncertain()`` returns: in
the try's own autocommit, or, inside an atomic job's open transaction, on a connection of
its own, so that neither a crash a moment later nor the job's rollback undoes it. Recovery
dead-letters an attempt so marked instead of running it again; a try whose outcome the
engine records (success, an ordinary failure) clears it (docs/design.md, "Lost workers").
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from django.db import connections

from .. import store
from ..exceptions import ClaimLost, UncertainNotDurable
from ..executors.log_text import escape_control
from ..models import Attempt

logger = logging.getLogger("django_cadence.runner")

MAX_REASON_CHARS = 500
DEFAULT_REASON = "marked uncertain by the job"


def marker(attempt_id: int, token: str, using: str | None = None) -> Callable[[str], None]:
    """The ``mark`` an ``AttemptContext`` calls for this try."""
    return functools.partial(mark, attempt_id, token, using=using)


def mark(attempt_id: int, token: str, reason: str, *, using: str | None = None) -> None:
    """Mark the attempt held by ``token`` uncertain, durably; raise ``ClaimLost`` if this
    try no longer holds it (the step must then not be taken)."""
    reason = (reason or DEFAULT_REASON)[:MAX_REASON_CHARS]
    using = using or store.alias()
    if connections[using].in_atomic_block:
        if not store.of(using).has_concurrent_writes:
            raise UncertainNotDurable
        written = _on_own_connection(attempt_id, token, reason, using)
    else:
        written = _write(attempt_id, token, reason, using)
    if not written:
        raise ClaimLost(
            f"Attempt {attempt_id} is no longer held by this try (recovered, timed out or "
            "finished): it was not marked uncertain, and the step must not be taken."
        )
    logger.info("attempt marked uncertain id=%s reason=%s", attempt_id, escape_control(reason))


def _write(attempt_id: int, token: str, reason: str, using: str) -> int:
    return Attempt.objects.using(using).held(attempt_id, token).mark_uncertain(reason)


def _on_own_connection(attempt_id: int, token: str, reason: str, using: str) -> int:
    """Write and commit from a short thread: Django gives it a connection of its own."""
    result: dict[str, Any] = {}

    def write() -> None:
        try:
            store.of(using).outside_pool()  # the try's own holds one of the pool's already
            result["written"] = _write(attempt_id, token, reason, using)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            result["error"] = exc
        finally:
            connections[using].close()

    thread = threading.Thread(target=write, name=f"cadence-uncertain-{attempt_id}")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return int(result["written"])
