"""Is the scheduler doing its job? The reasons it may not be, for monitors and the admin.

Five checks, each a few indexed reads (no counts over attempts):

- ``no_worker`` (critical): work is due and no worker is live (a heartbeat within
  ``worker_timeout()`` and, if it registered one, its session lock held); the message says
  what became of the last one (stopped when, or silent or its session gone since when);
- ``unserved_queue`` (critical): workers are live, but due work waits in a queue none of them
  serves (``ops/queues.py``); the message names the queues and the command to start;
- ``backlog`` (critical): the oldest due schedule or ready attempt has waited longer than
  its grace (its ``misfire_grace``, else ``CADENCE_MISFIRE_GRACE``, plus ``CADENCE_MAX_TICK``,
  the longest a healthy engine sleeps);
- ``overdue`` (warning): schedules gone longer without a success than they may
  (``models/overdue.py``);
- ``stuck_threads`` (warning): live workers hold stuck threads (``engine/stuck.py``).

:func:`fleet_reasons` (the first three) is what every admin page shows as a banner;
:func:`check` (all five) is what the health view and ``cadence_status --check`` report.
Messages carry counts, durations, instants and queue names only: no schedule names, worker
ids, payloads or errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Sum
from django.db.models.functions import Coalesce

from ..conf import cadence_settings
from ..models import Attempt, Schedule, Worker, overdue
from ..schedule.timefmt import format_utc
from .queues import names_of, unserved
from .status import live_workers, sessions_gone, worker_state, worker_timeout

READY_LOOKED_AT = 32
WORKERS_LOOKED_AT = 64  # the workers seen last (a stop or a heartbeat): a live one is among them
OK, WARNING, CRITICAL = "ok", "warning", "critical"
LEVELS = (OK, WARNING, CRITICAL)  # in order of gravity; a report's level is its worst reason's


@dataclass(frozen=True)
class Reason:
    check: str
    level: str
    message: str
    queues: tuple[str, ...] = ()  # the queues it names (``unserved_queue``)


@dataclass
class Health:
    now: datetime
    reasons: list[Reason] = field(default_factory=list)
    overdue_schedules: list[str] = field(default_factory=list)  # for the operator, not the view

    @property
    def level(self) -> str:
        return max((r.level for r in self.reasons), key=LEVELS.index, default=OK)

    def as_json(self, *, level: str = WARNING) -> dict[str, Any]:
        """The view's body: the level and every reason at ``level`` or above."""
        shown = [r for r in self.reasons if LEVELS.index(r.level) >= LEVELS.index(level)]
        return {
            "status": max((r.level for r in shown), key=LEVELS.index, default=OK),
            "checked_at": self.now.isoformat(),
            "reasons": [{"check": r.check, "level": r.level, "message": r.message} for r in shown],
        }


def _seconds(delta: timedelta) -> str:
    return f"{max(0, int(delta.total_seconds()))} s"


def _oldest_due(now: datetime) -> tuple[datetime, timedelta] | None:
    """The oldest due work: (since when it waits, its grace), or None when nothing is due."""
    default = cadence_settings.MISFIRE_GRACE
    waiting: list[tuple[datetime, timedelta]] = []
    due = Schedule.objects.due(now).order_by("next_run_at")
    schedule = due.values_list("next_run_at", "misfire_grace").first()
    if schedule and schedule[0] is not None:
        waiting.append((schedule[0], schedule[1] if schedule[1] is not None else default))
    attempt = _oldest_ready(now)
    if attempt:
        waiting.append((attempt[0], attempt[1] if attempt[1] is not None else default))
    return min(waiting, key=lambda pair: pair[0]) if waiting else None


def _oldest_ready(now: datetime) -> tuple[datetime, timedelta | None] | None:
    """The oldest ready attempt of an enabled schedule (a paused one's wait on purpose):
    (its ``retry_at``, its schedule's grace).

    Two reads, not a join: the oldest ``READY_LOOKED_AT`` ready attempts from the ready
    index, then their schedules by primary key. Joined, MariaDB may plan the read from the
    schedules and sort every ready attempt. Past that many attempts of paused schedules, it
    answers None.
    """
    oldest = list(
        Attempt.objects.ready(now)
        .order_by("retry_at")
        .values_list("retry_at", "schedule_id")[:READY_LOOKED_AT]
    )
    if not oldest:
        return None
    enabled = dict(
        Schedule.objects.enabled()
        .filter(pk__in={schedule_id for _, schedule_id in oldest})
        .values_list("pk", "misfire_grace")
    )
    for retry_at, schedule_id in oldest:
        if schedule_id in enabled and retry_at is not None:
            return retry_at, enabled[schedule_id]
    return None


def fleet_reasons(now: datetime) -> list[Reason]:
    """No live worker while work is due; due work in a queue no live worker serves; due work
    older than its grace. A few reads, each from an index: the oldest due schedule, the
    oldest ready attempts and their schedules, live workers (and, only when none of them
    serves every queue, the queues of the ready attempts)."""
    oldest = _oldest_due(now)
    if oldest is None:
        return []
    reasons = []
    since, grace = oldest
    no_worker, live = _no_worker(now)
    if no_worker:
        reasons.append(no_worker)
    else:
        waiting_in = unserved(now, [names_of(w.queues) for w in live])
        if waiting_in:
            listed = ",".join(waiting_in)
            reasons.append(
                Reason(
                    "unserved_queue",
                    CRITICAL,
                    f"due work waits in queue(s) {listed} that no live worker serves "
                    f"(start run_cadence --queues {listed})",
                    queues=tuple(waiting_in),
                )
            )
    allowed = grace + cadence_settings.MAX_TICK
    if now - since > allowed:
        reasons.append(
            Reason(
                "backlog",
                CRITICAL,
                f"due work has waited {_seconds(now - since)} to start (grace {_seconds(allowed)})",
            )
        )
    return reasons


def _no_worker(now: datetime) -> tuple[Reason | None, list[Worker]]:
    """None while a worker is live; else what is true of the last one. And the live workers.
    One read of the most recent workers, and one of their session locks where they
    registered them."""
    timeout = worker_timeout()
    fields = ("worker_id", "heartbeat_at", "stopped_at", "session_lock", "queues")
    last_seen = Coalesce("stopped_at", "heartbeat_at").desc()
    recent = list(Worker.objects.order_by(last_seen).only(*fields)[:WORKERS_LOOKED_AT])
    beating = [w for w in recent if worker_state(w, now, timeout) == "live"]
    gone = sessions_gone(beating)
    live = [w for w in beating if w.worker_id not in gone]
    if live:
        return None, live
    message = f"no worker is running while work is due: {_last(recent, gone, now)}"
    return Reason("no_worker", CRITICAL, message), []


def _last(recent: list[Worker], gone: set[str], now: datetime) -> str:
    """What became of the worker seen last."""
    if not recent:
        return "none has registered (start run_cadence)"
    last = recent[0]
    if last.stopped_at is not None:
        return (
            f"the last one stopped {_seconds(now - last.stopped_at)} ago, "
            f"at {format_utc(last.stopped_at)}"
        )
    heartbeat = f"{_seconds(now - last.heartbeat_at)} ago, at {format_utc(last.heartbeat_at)}"
    if last.worker_id in gone:
        return (
            "the last one's session ended without a stop (killed or cut off); its last "
            f"heartbeat was {heartbeat}"
        )
    return (
        f"the last heartbeat was {heartbeat}, from a worker that did not stop (killed, "
        "frozen or cut off)"
    )


def _stuck_reason(now: datetime) -> Reason | None:
    live = live_workers(now).filter(stuck_threads__gt=0)
    totals = live.aggregate(threads=Sum("stuck_threads"))
    threads = totals["threads"] or 0
    if not threads:
        return None
    workers = live.count()
    return Reason(
        "stuck_threads",
        WARNING,
        f"{workers} worker(s) hold {threads} stuck thread(s): tries past their run-time "
        "limit whose jobs ignore cancellation",
    )


def check(now: datetime) -> Health:
    """Every reason the scheduler may not be doing its job, as of ``now``."""
    health = Health(now=now, reasons=fleet_reasons(now))
    late = overdue.overdue(now)
    if late:
        health.overdue_schedules = [s.name for s in late]
        health.reasons.append(
            Reason(
                "overdue",
                WARNING,
                f"{len(late)} schedule(s) overdue: no success for longer than they may",
            )
        )
    stuck = _stuck_reason(now)
    if stuck:
        health.reasons.append(stuck)
    return health
