"""The moves of the attempt state machine (docs/design.md, "Attempt states"), as queryset
methods, and the one shape of an attempt's history entry.

Each move is one ``UPDATE`` guarded by the state it leaves, so a row that moved meanwhile
(claimed, recovered, finished) is left alone and the caller sees 0 rows written. The moves
of a running try are fenced by its claim token (invariant 3): start from :meth:`held`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import F

from .choices import Status

if TYPE_CHECKING:
    from .attempt import Attempt

    _Base = models.QuerySet[Attempt]
else:
    _Base = models.QuerySet


def history_entry(
    *,
    try_number: int,
    worker: str,
    started_at: datetime | None,
    finished_at: datetime | None,
    result: str,
    error: str = "",
) -> dict[str, Any]:
    """One entry of ``Attempt.history``: one try (or, with try 0, an event between tries)."""
    return {
        "try": try_number,
        "worker": worker,
        "started_at": started_at.isoformat() if started_at else None,
        "finished_at": finished_at.isoformat() if finished_at else None,
        "result": result,
        "error": error[:2000],
    }


class AttemptTransitions(_Base):
    def held(self, attempt_id: int, token: str) -> AttemptTransitions:
        """The one row a worker may still write: its attempt, running under its token."""
        return self.filter(pk=attempt_id, claim_token=token, status=Status.RUNNING)

    def mark_uncertain(self, reason: str) -> int:
        """A running try says its next step must not repeat (start from :meth:`held`)."""
        return self.filter(status=Status.RUNNING).update(uncertain=reason)

    def to_retry(self, *, retry_at: datetime, error: str, history: list[dict[str, Any]]) -> int:
        """running -> pending: the try failed and the attempt waits for ``retry_at``."""
        return self.filter(status=Status.RUNNING).update(
            status=Status.PENDING,
            retry_at=retry_at,
            claim_token=None,
            lease_until=None,
            error=error,
            uncertain="",  # the try failed in the open: its outcome is known
            history=history,
        )

    def to_dead_letter(
        self, *, now: datetime, error: str, history: list[dict[str, Any]], uncertain: str = ""
    ) -> int:
        """running -> dead letter: no tries left, a permanent failure, or an uncertain try that
        ended without an outcome (``uncertain`` keeps its mark for the operator)."""
        return self.filter(status=Status.RUNNING).update(
            status=Status.DEAD_LETTER,
            finished_at=now,
            lease_until=None,
            error=error,
            uncertain=uncertain,
            history=history,
        )

    def to_cancelled(
        self, *, now: datetime, reason: str, history: list[dict[str, Any]] | None = None
    ) -> int:
        """pending or running -> cancelled: an operator, or a replacing occurrence, stopped it."""
        fields: dict[str, Any] = {"history": history} if history is not None else {}
        return self.filter(status__in=(Status.PENDING, Status.RUNNING)).update(
            status=Status.CANCELLED, finished_at=now, lease_until=None, error=reason, **fields
        )

    def handed_back(self, *, now: datetime) -> int:
        """running -> pending at once, the cut-short try not counted (a worker shutting down)."""
        return self.filter(status=Status.RUNNING).update(
            status=Status.PENDING,
            retry_at=now,
            claim_token=None,
            lease_until=None,
            tries=F("tries") - 1,
        )

    def to_pending_again(self, *, now: datetime) -> int:
        """dead letter -> pending with a fresh set of tries (an operator's retry)."""
        return self.filter(status=Status.DEAD_LETTER).update(
            status=Status.PENDING,
            retry_at=now,
            tries=0,
            recoveries=0,
            uncertain="",  # an operator decided to run it again
            finished_at=None,
            claim_token=None,
            lease_until=None,
        )
