"""When a worker must be replaced: stuck threads past ``CADENCE_STUCK_THREADS_LIMIT``, or
tries claimed ahead whose threads could not be made. It then stops claiming, says why at
ERROR, and ``run`` drains; ``run_cadence`` exits with status 3 for its supervisor to start a
fresh process (docs/design.md, "Stuck threads").
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from ..conf import cadence_settings
from . import stuck

if TYPE_CHECKING:
    from .loop import Engine

logger = logging.getLogger("django_cadence.engine")


def check(engine: Engine, now: datetime) -> None:
    """The threads that never gave their try back (:func:`check_stuck`), and whether the
    tries due could be given threads at all (:func:`check_launches`)."""
    check_stuck(engine, now)
    check_launches(engine)


def check_stuck(engine: Engine, now: datetime) -> None:
    """Report a change in stuck threads at once; past the limit, stop claiming and say
    that this worker must be replaced (``run`` then drains and the command exits)."""
    count = engine.tries.stuck.count(now)
    if count != engine._stuck_reported:
        engine._stuck_reported = count
        engine._next_heartbeat = None
        if count:
            logger.warning(
                "stuck threads worker=%s count=%s: tries past their run-time limit whose "
                "jobs ignore cancellation; their slots were given back",
                engine.worker_id,
                count,
            )
    limit = cadence_settings.STUCK_THREADS_LIMIT
    if stuck.unhealthy(count, limit):
        must_be_replaced(engine, stuck.unhealthy_reason(count, limit))


def check_launches(engine: Engine) -> None:
    """Tries claimed ahead whose threads could not be made: replace this worker, whose
    start timer would otherwise go on failing the tries it claims."""
    if engine.tries.launch_failure is not None:
        must_be_replaced(engine, f"could not start tries: {engine.tries.launch_failure}")


def must_be_replaced(engine: Engine, why: str) -> None:
    """Unhealthy: stop claiming, say why at ERROR; ``run`` drains and the command exits
    with status 3 for its supervisor to start a fresh process."""
    if engine.unhealthy is not None:
        return
    engine.unhealthy = (
        f"worker unhealthy worker={engine.worker_id}: {why}; draining and exiting with "
        "status 3 so that its supervisor starts a fresh one"
    )
    logger.error(engine.unhealthy)
    engine.claiming = False
