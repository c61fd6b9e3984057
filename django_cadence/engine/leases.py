"""Attempts -> tries: claim an attempt under a fresh token, renew the lease, hand it back.

Invariant 3 starts here (docs/design.md): starting a try writes a fresh claim token, and every
later write of the worker is fenced by it (:mod:`.outcomes`). Invariant 5 too: a serial
schedule's row is locked while one of its attempts is claimed, and only its oldest waiting
attempt is taken, only when none of its attempts runs.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from .. import store
from ..conf import cadence_settings
from ..executors import registry as executors
from ..executors.log_text import log_value
from ..models import Attempt, Status
from ..models.transitions import AttemptTransitions
from ..schedule import policies
from ..store import batch_writes
from ..store.prepared import PreparedRead
from .claims import Claim, claim_of

logger = logging.getLogger("django_cadence.runner")


def claim(
    now: datetime | Callable[[], datetime],
    *,
    worker: str,
    slots: int,
    due_by: datetime | None = None,
    busy: Busy | None = None,
    ahead_until: datetime | None = None,
    ahead_slots: int = 0,
    queues: tuple[str, ...] | None = None,
    queue_limits: dict[str, int] | None = None,
) -> list[Claim]:
    """Claim up to ``slots`` attempts ready by ``due_by`` (default ``now``) for ``worker``,
    and up to ``ahead_slots`` more that will be ready by ``ahead_until``.

    Each gets a fresh claim token and a lease from ``now``. The engine passes its clock
    rather than an instant: the start is then read once the candidates are locked. An
    instant read before could be earlier than the finish of the try this one waited for
    (the previous try of a serial schedule, committed while the claim waited for a lock or
    for its snapshot), and the history would show two tries of it overlapping.

    ``queues`` names the queues served (sorted; None: every queue): an attempt is claimed
    only by a worker serving its schedule's queue; ``queue_limits`` caps how many of a queue's
    attempts this claim may take (the worker's free thread share of it, ``shares.py``).

    ``busy`` names what still runs in this worker's threads: a try taken from it may be
    running yet, and this worker never starts its attempt (or its serial schedule) again.

    A try claimed ahead of its ready time starts at that time (its ``started_at``), from
    the worker's start timer: the claim, its token, its lease and the overlap check happen
    now, off the path between the instant and the start (docs/design.md, "Starting on the
    instant").
    """
    ahead_slots = ahead_slots if ahead_until is not None else 0
    if slots <= 0 and ahead_slots <= 0:
        return []
    clock: Callable[[], datetime] = now if callable(now) else lambda: now
    if due_by is None:
        due_by = clock()
    read_by = max(due_by, ahead_until) if ahead_until is not None and ahead_slots else due_by
    using = Attempt.objects.db
    with transaction.atomic(using):
        # One statement reads and locks the candidates and their schedules (a schedule
        # locked by another worker leaves its attempts to a later tick).
        candidates = _CANDIDATES.rows(
            using,
            (_window(max(slots, 0) + ahead_slots), queues),
            read_by,
            setup=store.of(using).claim_setup_sql,
        )
        if not candidates:
            return []
        budget = _Budget(
            now=max(slots, 0), ahead=ahead_slots, due_by=due_by, shares=dict(queue_limits or {})
        )
        chosen = _choose(candidates, budget, busy or Busy(set(), set()))
        if not chosen:
            return []
        claims = _start_tries(using, chosen, worker, clock())
    return claims  # ``attempt_started`` is sent when each try runs (engine/running.py)


def _start_tries(using: str, chosen: list[Any], worker: str, started: datetime) -> list[Claim]:
    """Mark the chosen attempts running in one statement (the move pending -> running); the
    claims of those it started. Each starts at ``started`` or, claimed ahead, at its ready
    time.

    Each try's token is a fresh random batch prefix plus the attempt id: unguessable, and
    unique per try since every claim draws a new one. The chosen rows are locked, so the
    move's guard (still pending) refuses none but on a database without row locks.
    """
    batch = secrets.token_hex(8)
    ids = [a.id for a in chosen]
    started_count = batch_writes.start_tries(
        using,
        ids,
        batch=batch,
        worker=worker,
        now=started,
        lease_until=started + cadence_settings.LEASE,
    )
    if started_count < len(chosen):
        ours = set(
            Attempt.objects.using(using)
            .filter(pk__in=ids, claim_token__in=[f"{batch}{i}" for i in ids])
            .values_list("id", flat=True)
        )
        chosen = [a for a in chosen if a.id in ours]
    jobs: dict[str, executors.JobOptions] = {}  # one look-up per executor and batch
    # A try claimed ahead starts at its ready time, as the row says (``start_tries``).
    return [claim_of(c, f"{batch}{c.id}", max(started, c.retry_at), worker, jobs) for c in chosen]


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
    "schedule__queue",
    "retry_at",
)


def _candidates(shape: tuple[int, tuple[str, ...] | None], due_by: datetime) -> QuerySet[Any, Any]:
    """Ready attempts of enabled schedules (and manual runs asked for even if paused) in the
    queues served, oldest first, locked with their schedules.

    ``FOR UPDATE`` without ``OF`` locks the rows of both tables of the join on every backend.
    The queue is the schedule's, read through the join the claim makes anyway: changing a
    schedule's queue moves its waiting attempts with it.
    """
    window, queues = shape
    return (
        Attempt.objects.ready(due_by)
        .filter(in_queues(queues))
        # Nothing runs while its schedule is paused, but a manual run asked for even so
        # (invariant 6 in docs/design.md).
        .filter(Q(schedule__enabled=True) | Q(even_if_paused=True))
        .filter(_next_in_line())
        .order_by("retry_at")  # the ready index gives this order; ties by id would sort all
        .select_for_update(skip_locked=True)
        .values_list(*_CLAIM_FIELDS)[:window]
    )


_CANDIDATES = PreparedRead(_candidates, _CLAIM_FIELDS, Attempt._meta.get_field("retry_at"))


def in_queues(queues: tuple[str, ...] | None) -> Q:
    """Attempts whose schedule is in one of ``queues`` (None: every queue)."""
    return Q() if queues is None else Q(schedule__queue__in=queues)


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


class Busy(NamedTuple):
    """What runs in a worker's own threads, held or lost (taken from it, not yet ended)."""

    attempts: set[int]
    schedules: set[int]


@dataclass
class _Budget:
    """How many tries a claim may take: ready now (``due_by``), and ready later (ahead)."""

    now: int
    ahead: int
    due_by: datetime
    shares: dict[str, int]  # the free thread share of each queue that has one

    def take(self, retry_at: datetime, queue: str) -> bool:
        """Spend a slot of the right kind on an attempt ready at ``retry_at``, if one is left
        (and one of its queue's share, if it has one)."""
        if self.shares.get(queue, 1) <= 0:
            return False
        if retry_at <= self.due_by:
            if self.now <= 0:
                return False
            self.now -= 1
        else:
            if self.ahead <= 0:
                return False
            self.ahead -= 1
        if queue in self.shares:
            self.shares[queue] -= 1
        return True

    def spent(self) -> bool:
        return self.now <= 0 and self.ahead <= 0


def _choose(candidates: list[Any], budget: _Budget, busy: Busy) -> list[Any]:
    """Pick attempts to start: any number per ``allow`` schedule, one per serial schedule,
    none that this worker still runs (``busy``), within the budget of each kind.

    The read passes at most one attempt per serial schedule (any later one has an earlier
    one pending); a batch holds to that whatever the read returns.
    """
    serial_taken: set[int] = set(busy.schedules)
    chosen = []
    for attempt in candidates:
        if attempt.id in busy.attempts:
            continue
        serial = policies.is_serial(attempt.schedule_overlap)
        if serial and attempt.schedule_id in serial_taken:
            continue
        if not budget.take(attempt.retry_at, attempt.schedule_queue):
            continue
        if serial:
            serial_taken.add(attempt.schedule_id)
        chosen.append(attempt)
        if budget.spent():
            break
    return chosen


def fenced(c: Claim) -> AttemptTransitions:
    """The one row this worker may still write: its attempt, still running under its token."""
    return Attempt.objects.held(c.attempt_id, c.token)


def release(claims: list[Claim], now: datetime) -> int:
    """Hand unfinished tries back (shutdown, a try that found no thread): pending again, the
    cut-short try not counted, in one statement fenced by their tokens."""
    if not claims:
        return 0
    released = Attempt.objects.all_held([(c.attempt_id, c.token) for c in claims]).handed_back(
        now=now
    )
    for c in claims:
        logger.info("attempt released id=%s schedule=%s", c.attempt_id, log_value(c.schedule_name))
    return released


class Renewal(NamedTuple):
    """What a lease renewal learned: tries asked to stop, and tries no longer this worker's."""

    revoked: set[int]  # attempt ids whose cancellation was requested
    lost: set[str]  # claim tokens that matched no row: recovered, fenced out (invariant 3)


def renew(claims: list[Claim], now: datetime, *, worker: str) -> Renewal:
    """One statement renews every lease this worker holds, by claim token (the fence).

    It also re-asserts them after a cut session or a pause: a try whose row it no longer
    matches was taken from this worker, which must stop it at once (design.md, "Lost
    workers"). Finding which costs a third statement, only when fewer rows were renewed.
    """
    if not claims:
        return Renewal(set(), set())
    tokens = [c.token for c in claims]
    # By primary key (``all_held``): MariaDB would otherwise find the rows through an index on
    # status and lock every running row it reads, other workers' included, and deadlock with
    # a recovery that is updating a lost worker's rows (InnoDB error 1213).
    pairs = [(c.attempt_id, c.token) for c in claims]
    mine = Attempt.objects.all_held(pairs).filter(worker=worker)
    renewed = mine.update(lease_until=now + cadence_settings.LEASE)
    lost: set[str] = set()
    if renewed < len(claims):
        lost = set(tokens) - set(mine.values_list("claim_token", flat=True))
    revoked = set(
        Attempt.objects.all_held(pairs).filter(cancel_requested=True).values_list("id", flat=True)
    )
    return Renewal(revoked, lost)
