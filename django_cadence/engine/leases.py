"""Attempts -> tries: claim an attempt under a fresh token, renew the lease, hand it back.

Invariant 3 starts here (docs/design.md): starting a try writes a fresh claim token, and every
later write of the worker is fenced by it (:mod:`.outcomes`). Invariant 5 too: a serial
schedule's row is locked while one of its attempts is claimed, and only its oldest waiting
attempt is taken, only when none of its attempts runs.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from .. import signals, store
from ..conf import cadence_settings
from ..executors import calling
from ..executors import registry as executors
from ..executors.payloads import escape_control
from ..models import Attempt, Schedule, Status
from ..schedule import policies
from ..store import batch_writes
from ..store.prepared import PreparedRead

logger = logging.getLogger("django_cadence.runner")


@dataclass
class Claim:
    """Everything a worker needs to run one try and record it, without re-reading rows."""

    attempt_id: int
    token: str
    schedule_id: int
    schedule_name: str
    worker: str
    executor: str
    payload: dict[str, Any]
    occurrence_at: datetime
    trigger: str
    tries: int  # including this try
    recoveries: int
    started_at: datetime
    max_attempts: int
    retry_base: timedelta
    retry_cap: timedelta
    max_runtime: timedelta
    delivery: str
    isolation: str
    history: list[dict[str, Any]]
    pause_after_failures: int | None
    cancel_event: threading.Event = field(default_factory=threading.Event)

    @property
    def deadline(self) -> datetime:
        return self.started_at + self.max_runtime

    @property
    def idempotency_key(self) -> str:
        return calling.idempotency_key(self.schedule_id, self.occurrence_at, self.trigger)

    def context(self) -> calling.AttemptContext:
        return calling.AttemptContext(
            attempt_id=self.attempt_id,
            schedule_name=self.schedule_name,
            occurrence_at=self.occurrence_at,
            try_number=self.tries,
            idempotency_key=self.idempotency_key,
            deadline=self.deadline,
            cancel_event=self.cancel_event,
        )

    def event(self) -> dict[str, Any]:
        """The fields every attempt signal carries."""
        return {
            "attempt_id": self.attempt_id,
            "schedule": self.schedule_name,
            "occurrence_at": self.occurrence_at,
            "try_number": self.tries,
            "worker": self.worker,
        }


def resolved_options(
    schedule: Schedule | _ScheduleSettings, jobs: dict[str, executors.JobOptions] | None = None
) -> dict[str, Any]:
    """Per-attempt settings: the schedule's field, else the job's option, else the setting.

    ``jobs`` caches the job options by executor path for a batch of claims.
    """
    job = jobs.get(schedule.executor) if jobs is not None else None
    if job is None:
        try:
            job = executors.job_options(schedule.executor)
        except Exception:  # noqa: BLE001 - a disallowed path fails at run time, with its message
            job = executors.JobOptions(path=schedule.executor)
        if jobs is not None:
            jobs[schedule.executor] = job

    def pick(name: str, default: Any) -> Any:
        value = getattr(schedule, name)
        if value is None:
            value = getattr(job, name)
        return default if value is None else value

    return {
        "max_attempts": pick("max_attempts", cadence_settings.MAX_ATTEMPTS),
        "retry_base": pick("retry_base", cadence_settings.RETRY_BASE),
        "retry_cap": pick("retry_cap", cadence_settings.RETRY_CAP),
        "max_runtime": pick("max_runtime", cadence_settings.MAX_RUNTIME),
        "delivery": job.delivery,
        "isolation": job.isolation,
    }


def claim(
    now: datetime | Callable[[], datetime],
    *,
    worker: str,
    slots: int,
    due_by: datetime | None = None,
) -> list[Claim]:
    """Claim up to ``slots`` attempts ready by ``due_by`` (default ``now``) for ``worker``.

    Each gets a fresh claim token and a lease from ``now``. The engine passes its clock
    rather than an instant: the start is then read once the candidates are locked. An
    instant read before could be earlier than the finish of the try this one waited for
    (the previous try of a serial schedule, committed while the claim waited for a lock or
    for its snapshot), and the history would show two tries of it overlapping.
    """
    if slots <= 0:
        return []
    clock: Callable[[], datetime] = now if callable(now) else lambda: now
    if due_by is None:
        due_by = clock()
    using = Attempt.objects.db
    with transaction.atomic(using):
        # One statement reads and locks the candidates and their schedules (a schedule
        # locked by another worker leaves its attempts to a later tick).
        candidates = _CANDIDATES.rows(
            using, _window(slots), due_by, setup=store.of(using).claim_setup_sql
        )
        if not candidates:
            return []
        chosen = _choose(candidates, slots)
        if not chosen:
            return []
        started = clock()
        lease_until = started + cadence_settings.LEASE
        # One statement for the batch. Each try's token is a fresh random batch prefix plus
        # the attempt id: unguessable, and unique per try since every claim draws a new one.
        batch = secrets.token_hex(8)
        batch_writes.start_tries(
            using,
            [a.id for a in chosen],
            batch=batch,
            worker=worker,
            now=started,
            lease_until=lease_until,
        )
        claims = []
        jobs: dict[str, executors.JobOptions] = {}  # one look-up per executor and batch
        for candidate in chosen:
            token = f"{batch}{candidate.id}"
            claims.append(_claim_for(candidate, token, started, worker, jobs))
    for c in claims:
        signals.attempt_started.send(Attempt, **c.event())
    return claims


def _window(slots: int) -> int:
    """How many candidates the read locks for ``slots`` free slots.

    More than the slots (a serial schedule's later attempts are passed over), rounded up to
    a power of two: the read is compiled once per window (its ``LIMIT`` is part of the SQL),
    and a worker's free slots take every value from one to its capacity.
    """
    wanted = slots + max(4, slots // 4)
    return 1 << (wanted - 1).bit_length()


# What a claim reads: the attempt's own fields and its schedule's run settings.
_CLAIM_FIELDS = (
    "id",
    "schedule_id",
    "occurrence_at",
    "trigger",
    "tries",
    "recoveries",
    "history",
    "schedule__name",
    "schedule__executor",
    "schedule__payload",
    "schedule__overlap",
    "schedule__max_attempts",
    "schedule__retry_base",
    "schedule__retry_cap",
    "schedule__max_runtime",
    "schedule__pause_after_failures",
)


def _candidates(window: int, due_by: datetime) -> QuerySet[Attempt, Any]:
    """Ready attempts of enabled schedules, oldest first, locked with their schedules.

    ``FOR UPDATE`` without ``OF`` locks the rows of both tables of the join on every backend.
    """
    return (
        Attempt.objects.ready(due_by)
        .filter(schedule__enabled=True)  # nothing runs while its schedule is paused
        .filter(_next_in_line())
        .order_by("retry_at")  # the ready index gives this order; ties by id would sort all
        .select_for_update(skip_locked=True)
        .values_list(*_CLAIM_FIELDS)[:window]
    )


_CANDIDATES = PreparedRead(_candidates, _CLAIM_FIELDS, Attempt._meta.get_field("retry_at"))


def _next_in_line() -> Q:
    """A serial schedule's attempt may start only when none of its attempts runs and no
    earlier occurrence of it is pending (a retry not ready yet holds back later ones).

    This is decided in the locking read itself, which also locks each candidate's schedule:
    whoever claims one of a schedule's attempts holds its row until the claim commits, and
    another worker's read skips it meanwhile. A read whose snapshot predates such a claim
    still sees the claimed attempt as pending, so it leaves the later occurrences out as
    "behind an earlier one"; the claimed attempt itself is read at its latest version (a
    locking read) and is no longer pending. Held-back rows never fill the window either
    (they are ready earlier by ``retry_at`` than a head that was retried or recovered, and a
    large backlog would leave the worker nothing to claim).
    """
    # Two probes, each a range of the (schedule, status, occurrence_at) index. One probe with
    # an OR of statuses would read every attempt the schedule ever had, for every candidate.
    same_schedule = Attempt.objects.filter(schedule_id=OuterRef("schedule_id"))
    running = same_schedule.filter(status=Status.RUNNING)
    earlier = same_schedule.filter(
        status=Status.PENDING, occurrence_at__lt=OuterRef("occurrence_at")
    )
    return Q(schedule__overlap="allow") | (~Exists(running) & ~Exists(earlier))


def _choose(candidates: list[Any], slots: int) -> list[Any]:
    """Pick attempts to start: any number per ``allow`` schedule, one per serial schedule.

    The read passes at most one attempt per serial schedule (any later one has an earlier
    one pending); a batch holds to that whatever the read returns.
    """
    serial_taken: set[int] = set()
    chosen = []
    for attempt in candidates:
        if policies.is_serial(attempt.schedule_overlap):
            if attempt.schedule_id in serial_taken:
                continue
            serial_taken.add(attempt.schedule_id)
        chosen.append(attempt)
        if len(chosen) == slots:
            break
    return chosen


def _claim_for(
    candidate: Any,
    token: str,
    now: datetime,
    worker: str,
    jobs: dict[str, executors.JobOptions] | None = None,
) -> Claim:
    """The claim of one candidate row (``_CLAIM_FIELDS``), its try counted."""
    schedule = _ScheduleSettings(
        executor=candidate.schedule_executor,
        max_attempts=candidate.schedule_max_attempts,
        retry_base=candidate.schedule_retry_base,
        retry_cap=candidate.schedule_retry_cap,
        max_runtime=candidate.schedule_max_runtime,
    )
    return Claim(
        worker=worker,
        attempt_id=candidate.id,
        token=token,
        schedule_id=candidate.schedule_id,
        schedule_name=candidate.schedule_name,
        executor=candidate.schedule_executor,
        payload=candidate.schedule_payload,
        occurrence_at=candidate.occurrence_at,
        trigger=candidate.trigger,
        tries=candidate.tries + 1,
        recoveries=candidate.recoveries,
        started_at=now,
        history=list(candidate.history or []),
        pause_after_failures=candidate.schedule_pause_after_failures,
        **resolved_options(schedule, jobs),
    )


@dataclass(frozen=True)
class _ScheduleSettings:
    """The schedule fields ``resolved_options`` reads, from a claim's row."""

    executor: str
    max_attempts: int | None
    retry_base: timedelta | None
    retry_cap: timedelta | None
    max_runtime: timedelta | None


def fenced(c: Claim) -> QuerySet[Attempt, Attempt]:
    """The one row this worker may still write: its attempt, still running under its token."""
    return Attempt.objects.filter(pk=c.attempt_id, claim_token=c.token, status=Status.RUNNING)


def release(claims: list[Claim], now: datetime) -> int:
    """Hand unfinished tries back (shutdown): pending again, the cut-short try not counted."""

    released = 0
    for c in claims:
        released += fenced(c).update(
            status=Status.PENDING,
            retry_at=now,
            claim_token=None,
            lease_until=None,
            tries=F("tries") - 1,
        )
        logger.info(
            "attempt released id=%s schedule=%s", c.attempt_id, escape_control(c.schedule_name)
        )
    return released


def renew(claims: list[Claim], now: datetime, *, worker: str) -> set[int]:
    """One statement renews every lease this worker holds; returns ids asked to cancel."""
    if not claims:
        return set()
    tokens = [c.token for c in claims]
    # By primary key: MariaDB would otherwise find the rows through an index on status and
    # lock every running row it reads, other workers' included, and deadlock with a recovery
    # that is updating a lost worker's rows (InnoDB error 1213, seen in the chaos runs).
    ids = [c.attempt_id for c in claims]
    Attempt.objects.filter(
        pk__in=ids, status=Status.RUNNING, worker=worker, claim_token__in=tokens
    ).update(lease_until=now + cadence_settings.LEASE)
    return set(
        Attempt.objects.filter(
            pk__in=ids, status=Status.RUNNING, claim_token__in=tokens, cancel_requested=True
        ).values_list("id", flat=True)
    )
