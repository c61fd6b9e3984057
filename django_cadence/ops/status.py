"""What an operator asks first: is every schedule running on time, what fails, who works,
and which episodes of ``CADENCE_NOTIFY`` are open.

:func:`collect` reads it in a fixed handful of queries whatever the number of schedules
(``cadence_status`` prints it; the metrics collector and the workers admin share its
helpers). Job-provided text (errors) is scrubbed of secrets; payloads are never shown.

A worker is live while it renews its heartbeat and, if it registered a session lock
(PostgreSQL, MariaDB: docs/design.md, "Lost workers"), while the server still sees that lock
held: a killed worker's session ends with it, so it is lost at once, not a heartbeat timeout
later. Workers of a fleet are few: their rows are read whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Min, OuterRef, Q, QuerySet, Subquery

from .. import store
from ..executors.log_text import escape_control, headline
from ..executors.redaction import redact_text
from ..models import TERMINAL_STATUSES, Attempt, Notice, Schedule, Status, Worker, overdue
from ..models.worker import worker_timeout as worker_timeout
from ..schedule.timefmt import format_utc

FAILING_WINDOW = timedelta(hours=24)
ERROR_CHARS = 200


def worker_state(
    worker: Worker, now: datetime, timeout: timedelta | None = None, gone: Iterable[str] = ()
) -> str:
    """stopped, live, or lost (silent past ``timeout``, or its session lock in ``gone``)."""
    if worker.stopped_at is not None:
        return "stopped"
    if worker.worker_id in gone:
        return "lost"
    return "live" if worker.heartbeat_at >= now - (timeout or worker_timeout()) else "lost"


def sessions_gone(workers: Iterable[Worker]) -> set[str]:
    """Of ``workers``, those registered with a session lock the server no longer sees held:
    their session ended (killed, or cut off until they take it again). One statement, none
    when no worker registered one (SQLite, ``CADENCE_SESSION_LIVENESS = False``)."""
    locked = sorted(w.worker_id for w in workers if w.session_lock)
    if not locked:
        return set()
    return set(locked) - store.of().held_session_locks(locked)


def gone_but_beating(now: datetime, timeout: timedelta | None = None) -> set[str]:
    """Workers with a recent heartbeat whose session lock is gone (:func:`sessions_gone`)."""
    live = Worker.objects.live(now, timeout or worker_timeout())
    return sessions_gone(live.only("worker_id", "session_lock"))


def live_workers(now: datetime, timeout: timedelta | None = None) -> QuerySet[Worker, Worker]:
    """Workers with a recent heartbeat whose session lock, if they hold one, is held."""
    timeout = timeout or worker_timeout()
    return Worker.objects.live(now, timeout).exclude(worker_id__in=gone_but_beating(now, timeout))


def lost_workers(now: datetime, timeout: timedelta | None = None) -> QuerySet[Worker, Worker]:
    """Workers silent past ``timeout`` without stopping, or whose session lock is gone."""
    timeout = timeout or worker_timeout()
    gone = gone_but_beating(now, timeout)
    return Worker.objects.lost(now, timeout) | Worker.objects.filter(worker_id__in=gone)


@dataclass
class ScheduleStatus:
    name: str
    enabled: bool
    code_owned: bool
    next_run_at: datetime | None
    last_status: str | None
    last_occurrence_at: datetime | None
    lag_seconds: float | None  # now - the oldest ready pending attempt's retry_at
    pause_reason: str = ""
    timezone: str = "UTC"
    overdue_since: datetime | None = None  # gone longer without a success than it may, since
    calendars: list[str] = field(default_factory=list)  # calendars whose days it skips
    calendar_shift: str = "skip"

    @property
    def overdue(self) -> bool:
        return self.overdue_since is not None


@dataclass
class Failing:
    schedule: str
    dead_letters: int
    last_at: datetime | None
    last_error: str


@dataclass
class WorkerStatus:
    worker_id: str
    state: str
    host: str
    pid: int
    heartbeat_at: datetime
    in_flight: int
    concurrency: int
    stuck_threads: int = 0  # tries past their run-time limit whose jobs never returned
    stuck_since: datetime | None = None
    session_gone: bool = False  # lost although its heartbeat is recent: its session ended
    queues: str = ""  # the queues it serves ("reports:2,default"); "": every queue


@dataclass
class OpenEpisode:
    event: str
    name: str
    opened_at: datetime
    count: int
    detail: str


@dataclass
class StatusReport:
    now: datetime
    schedules: list[ScheduleStatus] = field(default_factory=list)
    failing: list[Failing] = field(default_factory=list)
    workers: list[WorkerStatus] = field(default_factory=list)
    queue_depth: int = 0  # ready pending attempts
    last_stopped_at: datetime | None = None  # when the last worker to stop cleanly stopped
    episodes: list[OpenEpisode] = field(default_factory=list)  # open notifications' episodes

    def as_json(self) -> dict[str, Any]:
        data = _jsonable(asdict(self))
        for shown, schedule in zip(data["schedules"], self.schedules, strict=True):
            shown["overdue"] = schedule.overdue
        return data


def schedules_summary() -> str:
    """One line for the start of the log: how many schedules may fire, and when the next does."""
    enabled = Schedule.objects.enabled().aggregate(count=Count("pk"), next_due=Min("next_run_at"))
    count, next_due = enabled["count"], enabled["next_due"]
    when = f"the next is due at {format_utc(next_due)}" if next_due else "none is due"
    return f"{count} schedule(s) enabled; {when}"


def collect(now: datetime) -> StatusReport:
    """Schedules, failing schedules, live and lost workers and the queue, as of ``now``."""
    report = StatusReport(now=now)
    oldest_ready = dict(
        Attempt.objects.ready(now)
        .values_list("schedule_id")
        .annotate(oldest=Min("retry_at"))
        .order_by()
    )
    report.queue_depth = Attempt.objects.ready(now).count()
    # Ordered by the whole unique key (occurrence, trigger): the unique index gives the order
    # and the scan stops at the first finished attempt, on MariaDB too (the admin's reason).
    last = Attempt.objects.filter(schedule=OuterRef("pk"), status__in=TERMINAL_STATUSES).order_by(
        "-occurrence_at", "-trigger"
    )
    late = {s.schedule_id: s.overdue_at for s in overdue.overdue(now)}
    rows: Iterable[Any] = Schedule.objects.annotate(
        last_status=Subquery(last.values("status")[:1]),
        last_occurrence_at=Subquery(last.values("occurrence_at")[:1]),
    ).order_by("name")
    for s in rows:
        oldest = oldest_ready.get(s.pk)
        report.schedules.append(
            ScheduleStatus(
                name=s.name,
                enabled=s.enabled,
                code_owned=s.code_owned,
                next_run_at=s.next_run_at,
                last_status=s.last_status,
                last_occurrence_at=s.last_occurrence_at,
                lag_seconds=max(0.0, (now - oldest).total_seconds()) if oldest else None,
                pause_reason=_clean(s.pause_reason),
                timezone=s.timezone,
                overdue_since=late.get(s.pk),
                calendars=list(s.calendars or []),
                calendar_shift=s.calendar_shift,
            )
        )
    report.failing = _failing(now)
    report.workers = _workers(now)
    stopped = Worker.objects.filter(stopped_at__isnull=False).aggregate(at=Max("stopped_at"))
    report.last_stopped_at = stopped["at"]
    report.episodes = [
        OpenEpisode(n.event, n.name, n.opened_at, n.count, _clean(n.detail))
        for n in Notice.objects.open().order_by("opened_at")
    ]
    return report


def _failing(now: datetime) -> list[Failing]:
    """Schedules with dead letters finished in the last 24 hours, the most failing first."""
    dead = Q(attempts__status=Status.DEAD_LETTER, attempts__finished_at__gte=now - FAILING_WINDOW)
    last_error = (
        Attempt.objects.filter(schedule=OuterRef("pk"), status=Status.DEAD_LETTER)
        .order_by("-finished_at", "-id")
        .values("error")[:1]
    )
    rows: Iterable[Any] = (
        Schedule.objects.annotate(
            dead_letters=Count("attempts", filter=dead),
            last_at=Max("attempts__finished_at", filter=dead),
            last_error=Subquery(last_error),
        )
        .filter(dead_letters__gt=0)
        .order_by("-dead_letters", "name")
    )
    return [Failing(s.name, s.dead_letters, s.last_at, _clean(s.last_error)) for s in rows]


def _workers(now: datetime) -> list[WorkerStatus]:
    timeout = worker_timeout()
    workers = list(Worker.objects.filter(stopped_at__isnull=True).order_by("worker_id"))
    gone = sessions_gone(w for w in workers if worker_state(w, now, timeout) == "live")
    return [
        WorkerStatus(
            worker_id=w.worker_id,
            state=worker_state(w, now, timeout, gone),
            host=w.host,
            pid=w.pid,
            heartbeat_at=w.heartbeat_at,
            in_flight=w.in_flight,
            concurrency=w.concurrency,
            stuck_threads=w.stuck_threads,
            stuck_since=w.stuck_since,
            session_gone=w.worker_id in gone,
            queues=w.queues,
        )
        for w in workers
    ]


def _clean(text: str | None) -> str:
    """The line of job-provided text that says what went wrong (a traceback's exception line,
    else the first line), secrets scrubbed, control characters escaped."""
    if not text:
        return ""
    line = escape_control(headline(redact_text(str(text))))
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 1] + "…"


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value
