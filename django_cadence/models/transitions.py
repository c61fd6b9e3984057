"""The moves of the attempt state machine (docs/design.md, "Attempt states"), as queryset
methods, and the one shape of an attempt's history entry.

Each move is one statement guarded by the state it leaves, so a row that moved meanwhile
(claimed, recovered, finished) is left alone and the caller sees 0 rows written. The moves
of a running try are fenced by its claim token too (invariant 3): start from :meth:`held`.
A move that ends a try appends that try's entry to ``history`` (:func:`history_entry`).

Three moves a busy worker makes for many attempts at once are one plain-SQL statement each,
in ``store/batch_writes.py`` (the store sits above the models and spells what differs by
database): plan (``insert_planned``), start (``start_tries``) and succeed
(``end_in_success``), with the same guards. A manual run is planned by ``services.trigger``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Case, F, Value, When

from .choices import Status

if TYPE_CHECKING:
    from .attempt import Attempt

    _Base = models.QuerySet[Attempt]
else:
    _Base = models.QuerySet

# The error of a recovered attempt that has none of its own (the TypeScript seed's words).
ORPHANED = "orphaned: worker crashed or stalled"


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


@dataclass(frozen=True)
class LostTry:
    """What recovery decided for a running attempt whose worker was lost: pending again at
    ``retry_at``, or, with a ``dead_letter`` reason, a dead letter."""

    attempt: Attempt  # as locked by the recovery, still holding its try's token
    cause: str  # why its worker is deemed lost, for the history entry
    retry_at: datetime | None = None
    dead_letter: str | None = None


class AttemptTransitions(_Base):
    def held(self, attempt_id: int, token: str) -> AttemptTransitions:
        """The one row a worker may still write: its attempt, running under its token."""
        return self.filter(pk=attempt_id, claim_token=token, status=Status.RUNNING)

    def all_held(self, claims: Sequence[tuple[int, str]]) -> AttemptTransitions:
        """The rows a worker may still write, of ``(attempt id, token)`` pairs: by primary key
        (on MariaDB a read through the status index would lock other workers' rows), fenced
        by the tokens, each unique to its claim."""
        ids = [attempt_id for attempt_id, _ in claims]
        tokens = [token for _, token in claims]
        return self.filter(pk__in=ids, claim_token__in=tokens, status=Status.RUNNING)

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
        """pending or running -> cancelled: an operator, or a replacing occurrence, stopped it
        (a running try's own ``history`` entry when it stopped)."""
        fields: dict[str, Any] = {"history": history} if history is not None else {}
        return self.filter(status__in=(Status.PENDING, Status.RUNNING)).update(
            status=Status.CANCELLED, finished_at=now, lease_until=None, error=reason, **fields
        )

    def ask_to_stop(self) -> int:
        """running: ask the try to stop (an operator's cancel, a replacing occurrence); its
        worker sees it at its next renewal and ends it ``cancelled``."""
        return self.filter(status=Status.RUNNING).update(cancel_requested=True)

    def handed_back(self, *, now: datetime) -> int:
        """running -> pending at once, the cut-short try not counted (a worker shutting down).

        A try claimed ahead of its ``retry_at`` keeps it: handed back before its instant, it
        must not become ready before it (invariant 6).
        """
        return self.filter(status=Status.RUNNING).update(
            status=Status.PENDING,
            retry_at=Case(When(retry_at__gt=now, then=F("retry_at")), default=Value(now)),
            claim_token=None,
            lease_until=None,
            tries=F("tries") - 1,
        )

    def recovered(self, lost: Sequence[LostTry], *, now: datetime) -> int:
        """running -> pending (at each one's ``retry_at``) or dead letter: their worker was
        lost. One statement, fenced by the tokens the recovery read; clearing the token fences
        the lost worker out, should it come back (invariant 3). The instances are changed to
        what was written."""
        tokens = [try_.attempt.claim_token for try_ in lost]
        for try_ in lost:
            _recover(try_, now)
        return self.filter(status=Status.RUNNING, claim_token__in=tokens).bulk_update(
            [try_.attempt for try_ in lost], _RECOVERED_FIELDS
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

    def brought_forward(self, *, now: datetime) -> int:
        """pending, waiting for a retry -> pending, ready now (an operator's "retry now")."""
        return self.filter(status=Status.PENDING, tries__gte=1, retry_at__gt=now).update(
            retry_at=now
        )

    def discarded(self) -> int:
        """dead letter -> gone: an operator decided it should never run (the caller records
        it first)."""
        return self.filter(status=Status.DEAD_LETTER).delete()[0]

    def reopened(
        self,
        *,
        status: str,
        retry_at: datetime | None,
        finished_at: datetime | None,
        error: str,
        history: list[dict[str, Any]],
    ) -> int:
        """missed -> pending or skipped: a backfill plans a missed occurrence after all; the
        missed record's note stays in ``history``."""
        return self.filter(status=Status.MISSED).update(
            status=status,
            retry_at=retry_at,
            finished_at=finished_at,
            error=error,
            outcome=None,
            history=history,
        )


_RECOVERED_FIELDS = (
    "status",
    "retry_at",
    "finished_at",
    "error",
    "claim_token",
    "lease_until",
    "recoveries",
    "history",
)


def _recover(lost: LostTry, now: datetime) -> None:
    """Change a lost try's attempt in memory to what :meth:`recovered` writes."""
    attempt = lost.attempt
    # A try claimed ahead starts at its ``started_at``; lost before that instant, it had not
    # started by the clock of the worker recovering it, and its entry shows no start.
    ahead = attempt.started_at is not None and attempt.started_at > now
    when = ", before its instant" if ahead else ""
    note = f"worker {attempt.worker or '?'} was lost on try {attempt.tries}{when}: {lost.cause}"
    attempt.history = [
        *(attempt.history or []),
        history_entry(
            try_number=attempt.tries,
            worker=attempt.worker,
            started_at=None if ahead else attempt.started_at,
            finished_at=now,
            result="lost",
            error=note,
        ),
    ]
    attempt.claim_token = None
    attempt.lease_until = None
    if not attempt.error:  # nothing of the job's own to show: say what happened
        attempt.error = f"{ORPHANED} ({note})"
    if lost.dead_letter is None:
        assert lost.retry_at is not None  # a recovered try is retried or dead-lettered
        attempt.status = Status.PENDING
        attempt.retry_at = lost.retry_at
    else:
        attempt.status = Status.DEAD_LETTER
        attempt.finished_at = now
        attempt.error = f"{attempt.error}\n[dead letter: {lost.dead_letter}]"
    attempt.recoveries += 1
