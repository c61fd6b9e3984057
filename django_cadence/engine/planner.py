"""Due schedules -> attempt rows, in one transaction per batch.

Invariant 2 lives here: a schedule's slot is advanced and the occurrence's attempt created
(or its ``skipped`` / ``missed`` record written) in the same transaction, under a row lock on
the schedule, so a crash leaves both or neither and two workers never plan the same slot.
A batch costs a fixed handful of statements however many schedules it plans.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice, takewhile
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from .. import signals, store
from ..admission import overlap_states, planned_row
from ..conf import cadence_settings
from ..executors.log_text import escape_control
from ..models import Attempt, Schedule, Status, Trigger, calendar_sets
from ..schedule import policies, specs
from ..schedule.calendar_filter import ExcludedRun
from ..store import batch_writes
from ..store.batch_writes import PlannedRow
from ..store.prepared import PreparedRead
from . import catch_up

logger = logging.getLogger("django_cadence.planner")

MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class PlanResult:
    schedules: int  # schedules planned in this batch
    attempts: int  # attempt rows written (pending, skipped and missed records)
    more: bool  # the batch was full: call again before sleeping
    # The earliest slot left to plan on its instant: due ahead, but its serial schedule had
    # an attempt running or waiting (``may_plan_ahead``).
    deferred: datetime | None = None


# Every column, in the model's order: rows become instances as the ORM would make them.
_SCHEDULE_FIELDS = tuple(f.attname for f in Schedule._meta.concrete_fields)


def _due(batch_size: int, now: datetime) -> QuerySet[Schedule, Any]:
    return (
        Schedule.objects.due(now)
        .order_by("next_run_at")
        .select_for_update(skip_locked=True)
        .values_list(*_SCHEDULE_FIELDS)[:batch_size]
    )


# The engine runs this read on every tick that plans; compiled once, it costs a fraction.
_DUE = PreparedRead(_due, _SCHEDULE_FIELDS, Schedule._meta.get_field("next_run_at"))


def due_schedules(now: datetime, batch_size: int) -> list[Schedule]:
    """Up to ``batch_size`` due schedules, oldest slot first, locked (call in a transaction);
    schedules another worker has locked are skipped."""
    using = Schedule.objects.db
    return [
        Schedule.from_db(using, _SCHEDULE_FIELDS, row) for row in _DUE.rows(using, batch_size, now)
    ]


def plan_due(
    now: datetime, *, batch_size: int | None = None, ahead_until: datetime | None = None
) -> PlanResult:
    """Plan every due occurrence of up to ``batch_size`` schedules (``CADENCE_PLAN_BATCH``),
    locked, in one transaction; with ``ahead_until``, also the occurrences due by then.

    Planning ahead of the instant decides misfire from ``now`` (an occurrence not yet due is
    on time) and overlap from what the schedule has in flight now; a serial schedule with an
    attempt running or waiting is left to be planned on its instant, when its state may
    differ (docs/design.md, "Starting on the instant").
    """
    batch_size = batch_size or cadence_settings.PLAN_BATCH
    horizon = max(now, ahead_until) if ahead_until is not None else now
    with transaction.atomic(using=store.alias()):
        schedules = due_schedules(horizon, batch_size)
        if not schedules:
            return PlanResult(0, 0, False)
        read = len(schedules)
        states = overlap_states([s.pk for s in schedules])
        deferred = [s for s in schedules if not _may_plan_ahead(s, now, states[s.pk])]
        if deferred:
            schedules = [s for s in schedules if s not in deferred]
        deferred_at = min((s.next_run_at for s in deferred if s.next_run_at), default=None)
        if not schedules:
            return PlanResult(0, 0, False, deferred_at)
        loaded = {s.pk: (s.occurrence_count, s.missed_count) for s in schedules}
        rows: list[PlannedRow] = []
        to_cancel: list[int] = []
        to_supersede: list[int] = []
        catching_up: list[catch_up.CatchUp] = []
        uses_calendars = any(s.calendars for s in schedules)
        with calendar_sets.snapshot() if uses_calendars else nullcontext():
            planned_each = [(s, *_plan_schedule(s, now, states[s.pk], horizon)) for s in schedules]
        for schedule, planned, admission, behind in planned_each:
            rows.extend(planned)
            if behind is not None:
                catching_up.append(behind)
            if admission.cancel_running:
                to_cancel.append(schedule.pk)
            if admission.cancel_waiting:
                to_supersede.append(schedule.pk)
        if to_supersede:  # before the insert: only the attempts waiting before this tick
            Attempt.objects.pending().filter(
                schedule_id__in=to_supersede, trigger=Trigger.SCHEDULE
            ).to_cancelled(now=now, reason=policies.REPLACED)
        # A row that already exists is a quiet no-op (invariant 1).
        batch_writes.insert_planned(Attempt.objects.db, rows, now=now)
        _advance(schedules, loaded)
        if to_cancel:
            Attempt.objects.filter(schedule_id__in=to_cancel).ask_to_stop()
    catch_up.log(catching_up)
    for row in rows:
        _announce(row)
    return PlanResult(len(schedules), len(rows), read == batch_size, deferred_at)


def _may_plan_ahead(schedule: Schedule, now: datetime, state: policies.OverlapState) -> bool:
    """Whether a due schedule is planned now: on or past its instant always; ahead of it
    when its overlap policy would admit the occurrence whatever finishes meanwhile."""
    assert schedule.next_run_at is not None  # a due schedule has its next occurrence
    if schedule.next_run_at <= now:
        return True
    return not policies.is_serial(schedule.overlap) or not (state.running or state.waiting)


def _advance(schedules: list[Schedule], loaded: dict[int, tuple[int, int]]) -> None:
    """Write the schedules' new slots: one UPDATE per distinct change, not one CASE per row.

    Schedules planned alike in one tick (a burst of one-shots, intervals on one grid) share
    one statement; counters are incremented in SQL from what this tick added.
    """
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for s in schedules:
        fired = s.occurrence_count - loaded[s.pk][0]
        missed = s.missed_count - loaded[s.pk][1]
        groups[(s.next_run_at, s.last_run_at, fired, missed)].append(s.pk)
    for (next_run_at, last_run_at, fired, missed), ids in groups.items():
        batch_writes.advance_schedules(
            Schedule.objects.db,
            ids,
            next_run_at=next_run_at,
            last_run_at=last_run_at,
            fired=fired,
            missed=missed,
        )


def _announce(row: PlannedRow) -> None:
    """Log a planned attempt; send the signal of an occurrence recorded as not run."""
    name = row.schedule_name
    if row.status == Status.SKIPPED:
        reason = row.error.removeprefix("skipped: ")
        signals.send(
            signals.occurrence_skipped,
            Attempt,
            schedule=name,
            occurrence_at=row.occurrence_at,
            reason=reason,
        )
    elif row.status == Status.MISSED:
        signals.send(
            signals.occurrence_missed,
            Attempt,
            schedule=name,
            first=row.occurrence_at,
            last=datetime.fromisoformat(row.outcome["last"]),
            count=row.outcome["missed"],
        )
    elif logger.isEnabledFor(logging.DEBUG):
        # DEBUG: the attempt's start is logged at INFO; a line here too would double the log
        # of a busy engine and its cost.
        logger.debug(
            "attempt planned schedule=%s occurrence=%s",
            escape_control(name),
            row.occurrence_at.isoformat(),
        )


def due_occurrences(schedule: Schedule, now: datetime, limit: int | None) -> list[datetime]:
    """The schedule's occurrences from ``next_run_at`` up to ``now`` (at most ``limit``);
    the planner passes its horizon as ``now`` when it plans ahead."""
    assert schedule.next_run_at is not None  # a due schedule has its next occurrence
    after = schedule.next_run_at - MICROSECOND
    spec = schedule.spec()
    due = takewhile(lambda at: at <= now, specs.occurrences(spec, after))
    return list(islice(due, limit) if limit else due)


def _plan_schedule(
    schedule: Schedule, now: datetime, state: policies.OverlapState, horizon: datetime
) -> tuple[list[PlannedRow], policies.Admission, catch_up.CatchUp | None]:
    """Rows for one schedule's occurrences due by ``horizon``, what the overlap policy
    asks of the attempts it already has (cancel the running one, supersede the waiting
    ones), and what it catches up, if it is behind."""
    fire_all = schedule.misfire == "fire_all"
    max_catchup = cadence_settings.MAX_CATCHUP
    due = due_occurrences(schedule, horizon, max_catchup if fire_all else None)
    if not due:  # bounds changed under us: nothing due after all
        schedule.next_run_at = schedule.compute_next_run_at()
        return [], policies.Admission(statuses=()), None
    grace = schedule.misfire_grace
    grace = cadence_settings.MISFIRE_GRACE if grace is None else grace
    plan = policies.plan_misfire(
        due, now, policy=schedule.misfire, grace=grace, max_catchup=max_catchup
    )
    admission = policies.admit(schedule.overlap, state, len(plan.fire))
    rows = [
        planned_row(schedule, at, status, reason, now)
        for at, status, reason in zip(plan.fire, admission.statuses, admission.reasons, strict=True)
    ]
    if plan.missed:
        rows.append(_missed_row(schedule, plan.missed, now))
    assert plan.advance_to is not None  # nothing due returned earlier
    if schedule.calendars:
        # As compute_next_run_at: nothing from before the last enabling is recorded.
        enabled = schedule.enabled_at or schedule.created_at
        since = max(schedule.last_run_at, enabled) if schedule.last_run_at else enabled
        runs = specs.excluded_runs(schedule.spec(), since, plan.advance_to)
        rows.extend(_excluded_row(schedule, run, now) for run in runs)
    schedule.last_run_at = plan.advance_to
    schedule.occurrence_count += len(plan.fire)
    schedule.missed_count += len(plan.missed)
    schedule.next_run_at = specs.next_occurrence(schedule.spec(), plan.advance_to)
    return rows, admission, catch_up.note(schedule, plan, admission.statuses, now, grace)


def _excluded_row(schedule: Schedule, run: ExcludedRun, now: datetime) -> PlannedRow:
    """One record for a run of occurrences a calendar excluded: its reason, range and count."""
    shift = schedule.calendar_shift
    moved = "" if shift == "skip" else f", moved to the {shift} included day"
    span = (
        ""
        if run.count == 1
        else f" ({run.count} occurrences from {run.first.isoformat()} to {run.last.isoformat()})"
    )
    return PlannedRow(
        schedule_id=schedule.pk,
        schedule_name=schedule.name,
        occurrence_at=run.first,
        status=Status.SKIPPED,
        finished_at=now,
        error=f"skipped: calendar {run.calendar}{moved}{span}",
        outcome={
            "calendar": run.calendar,
            "shift": shift,
            "excluded": run.count,
            "first": run.first.isoformat(),
            "last": run.last.isoformat(),
        },
    )


def _missed_row(schedule: Schedule, missed: tuple[datetime, ...], now: datetime) -> PlannedRow:
    """One record for a run of missed occurrences: its range and its count."""
    first, last = missed[0], missed[-1]
    return PlannedRow(
        schedule_id=schedule.pk,
        schedule_name=schedule.name,
        occurrence_at=first,
        status=Status.MISSED,
        finished_at=now,
        error=(
            f"missed {len(missed)} occurrence(s) from {first.isoformat()} to "
            f"{last.isoformat()} (misfire={schedule.misfire})"
        ),
        outcome={"missed": len(missed), "first": first.isoformat(), "last": last.isoformat()},
    )
