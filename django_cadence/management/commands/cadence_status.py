"""``manage.py cadence_status [--json] [--check]``: schedules, failures, workers and the queue
at a glance; with ``--check``, the health checks in the convention of monitoring plugins.

Per schedule: enabled, next run, last outcome, lag (how long the oldest ready attempt has
waited to start) and whether it is overdue. Then the schedules with dead letters in the last
24 hours, the live and lost workers (silent for more than 3 x max(CADENCE_LEASE,
CADENCE_MAX_TICK), or whose session lock is gone), when the last one stopped if none is live,
the queue depth, and the open episodes of the notifications (``CADENCE_NOTIFY``).

``--check`` prints a one-line summary, then one line per reason (``ops/health.py``), and
exits 0 (OK), 1 (WARNING), 2 (CRITICAL) or 3 (UNKNOWN: the database did not answer), as
Nagios, Icinga and Sensu plugins do.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError

from django_cadence.clock import default_clock
from django_cadence.executors.log_text import escape_control
from django_cadence.ops import health
from django_cadence.ops.status import StatusReport, collect
from django_cadence.schedule.describe import zone
from django_cadence.schedule.timefmt import format_instant, format_utc


class Command(BaseCommand):
    help = "Show schedules (next run, last outcome, lag), failing schedules, workers and the queue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON document.")
        parser.add_argument(
            "--check",
            action="store_true",
            help="Run the health checks: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, "
            "a one-line summary first.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["check"]:
            code = self._check(as_json=options["json"])
            if code:
                sys.exit(code)
            return
        report = collect(default_clock().now())
        if options["json"]:
            self.stdout.write(json.dumps(report.as_json(), indent=2))
            return
        self.stdout.write("\n".join(render(report)))

    def _check(self, *, as_json: bool) -> int:
        try:
            result = health.check(default_clock().now())
        except DatabaseError as exc:
            reason = f"database unavailable: {type(exc).__name__}"
            if as_json:
                self.stdout.write(json.dumps(_unknown(reason), indent=2))
            else:
                self.stdout.write(f"CADENCE UNKNOWN - {reason}")
            return EXIT_CODES["unknown"]
        if as_json:
            self.stdout.write(json.dumps(result.as_json(), indent=2))
        else:
            self.stdout.write("\n".join(render_check(result)))
        return EXIT_CODES[result.level]


EXIT_CODES = {health.OK: 0, health.WARNING: 1, health.CRITICAL: 2, "unknown": 3}


def _unknown(reason: str) -> dict[str, Any]:
    """``--check --json`` when the database did not answer: the shape of ``Health.as_json``,
    with the one reason the checks could not run."""
    return {
        "status": "unknown",
        "checked_at": None,
        "reasons": [{"check": "database", "level": "unknown", "message": reason}],
    }


def render_check(result: health.Health) -> list[str]:
    """A monitoring plugin's output: ``CADENCE <LEVEL> - <reasons>``, then the details."""
    if not result.reasons:
        return ["CADENCE OK - workers live, nothing late, nothing overdue, no stuck threads"]
    summary = "; ".join(f"{r.check}: {r.message}" for r in result.reasons)
    lines = [f"CADENCE {result.level.upper()} - {summary}"]
    lines += [f"{r.level.upper()} {r.check}: {r.message}" for r in result.reasons]
    lines += [f"overdue schedule: {escape_control(name)}" for name in result.overdue_schedules]
    return lines


def render(report: StatusReport) -> list[str]:
    lines = [f"Schedules ({len(report.schedules)}) at {_at(report.now)}"]
    rows = [
        (
            escape_control(s.name),
            "yes" if s.enabled else "paused",
            "code" if s.code_owned else "db",
            format_instant(s.next_run_at, zone(s.timezone)) if s.enabled else "-",
            f"{s.last_status} {format_instant(s.last_occurrence_at, zone(s.timezone))}"
            if s.last_status
            else "-",
            _seconds(s.lag_seconds),
            f"for {_seconds((report.now - s.overdue_since).total_seconds())}"
            if s.overdue_since
            else "-",
        )
        for s in report.schedules
    ]
    header = ("NAME", "ENABLED", "SOURCE", "NEXT RUN", "LAST OUTCOME", "LAG", "OVERDUE")
    lines += _table(header, rows)
    under = [s for s in report.schedules if s.calendars]
    if under:
        lines.append(
            "Calendars: "
            + "; ".join(
                f"{escape_control(s.name)} skips the days of "
                f"{escape_control(', '.join(s.calendars))}"
                + (
                    ""
                    if s.calendar_shift == "skip"
                    else f" (shifted to the {s.calendar_shift} day)"
                )
                for s in under
            )
        )
    late = sum(s.overdue for s in report.schedules)
    if late:
        lines.append(f"Overdue: {late} schedule(s) gone longer without a success than they may")
    lines.append("")
    lines.append(f"Failing: {len(report.failing)} schedule(s) with dead letters in the last 24 h")
    for f in report.failing:
        lines.append(
            f"  {escape_control(f.schedule)}: {f.dead_letters} dead letter(s), "
            f"last {_at(f.last_at)}"
        )
        if f.last_error:
            lines.append(f"    {f.last_error}")
    live = [w for w in report.workers if w.state == "live"]
    lost = [w for w in report.workers if w.state == "lost"]
    lines.append("")
    lines.append(f"Workers: {len(live)} live, {len(lost)} lost{_last_stop(report, live)}")
    worker_rows = [
        (
            "lost (session gone)" if w.session_gone else w.state,
            escape_control(w.worker_id),
            escape_control(w.host),
            str(w.pid),
            f"{_seconds((report.now - w.heartbeat_at).total_seconds())} ago",
            escape_control(w.queues) or "*",
            f"{w.in_flight}/{w.concurrency}",
            _stuck(w.stuck_threads, w.stuck_since, report.now),
        )
        for w in live + lost
    ]
    lines += _table(
        ("STATE", "WORKER", "HOST", "PID", "HEARTBEAT", "QUEUES", "IN FLIGHT", "STUCK"),
        worker_rows,
    )
    lines.append("")
    lines.append(f"Queue: {report.queue_depth} attempt(s) ready to start")
    lines.append("")
    lines.append(f"Open episodes: {len(report.episodes)}")
    episode_rows = [
        (e.event, escape_control(e.name), _at(e.opened_at), str(e.count), e.detail or "-")
        for e in report.episodes
    ]
    lines += _table(("EVENT", "ON", "SINCE", "COUNT", "LATEST"), episode_rows)
    return lines


def _last_stop(report: StatusReport, live: Sequence[object]) -> str:
    """When no worker is live, when the last one to stop cleanly stopped."""
    stopped = report.last_stopped_at
    if live or stopped is None:
        return ""
    ago = _seconds((report.now - stopped).total_seconds())
    return f"; the last worker to stop stopped {ago} ago, at {_at(stopped)}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ["  (none)"]
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    return [
        ("  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))).rstrip()
        for row in (header, *rows)
    ]


def _at(value: datetime | None) -> str:
    """Instants that belong to no schedule: in UTC, to the second, labelled (``timefmt``)."""
    return format_utc(value)


def _stuck(count: int, since: datetime | None, now: datetime) -> str:
    """Stuck threads and for how long the oldest has been stuck: ``2 for 5m``."""
    if not count:
        return "-"
    return f"{count} for {_seconds((now - since).total_seconds())}" if since else str(count)


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 120:
        return f"{value:.0f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.1f}h"
