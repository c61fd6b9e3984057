"""``manage.py cadence_backfill NAME --from ISO --to ISO [--dry-run]``.

Plans the schedule's occurrences in a past range as attempts (trigger ``schedule``) through
its overlap policy; occurrences that already have an attempt are left alone, so a backfill can
be re-run safely. A time without an offset is read in the schedule's time zone. Long ranges
show a progress bar on stderr.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_cadence.clock import default_clock
from django_cadence.management.arguments import positive_int
from django_cadence.models import Schedule
from django_cadence.ops.backfill import backfill
from django_cadence.schedule import instants

BAR_WIDTH = 30


class Command(BaseCommand):
    help = "Plan a schedule's occurrences over a past range as attempts (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The schedule's name.")
        parser.add_argument("--from", dest="start", required=True, help="ISO 8601 start.")
        parser.add_argument("--to", dest="end", required=True, help="ISO 8601 end (inclusive).")
        parser.add_argument("--dry-run", action="store_true", help="Count; write nothing.")
        parser.add_argument(
            "--batch-size", type=positive_int, default=500, help="Occurrences per transaction."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            schedule = Schedule.objects.get(name=options["name"])
        except Schedule.DoesNotExist:
            raise CommandError(f"No schedule named {options['name']!r}.") from None
        zone = ZoneInfo(schedule.timezone or "UTC")
        start = _instant("--from", options["start"], zone)
        end = _instant("--to", options["end"], zone)
        batch_size = self._batch_size = options["batch_size"]
        try:
            result = backfill(
                schedule,
                start,
                end,
                now=default_clock().now(),
                dry_run=options["dry_run"],
                batch_size=batch_size,
                progress=self._progress,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        verb = "would plan" if result.dry_run else "planned"
        reopened = f", {result.reopened} of them missed before" if result.reopened else ""
        self.stdout.write(
            f"{schedule.name}: {result.occurrences} occurrence(s) from {start.isoformat()} to "
            f"{end.isoformat()}; {result.existing} already had an attempt; {verb} "
            f"{result.pending} pending and {result.skipped} skipped "
            f"(overlap={schedule.overlap}){reopened}"
        )
        if not schedule.enabled and result.pending:
            self.stdout.write(f"note: {schedule.name} is paused; its attempts wait for a resume")

    def _progress(self, done: int, total: int) -> None:
        """``[#####     ] 512/1024`` on stderr, for ranges longer than one batch."""
        if total <= self._batch_size:
            return
        filled = BAR_WIDTH * done // total if total else BAR_WIDTH
        bar = "#" * filled + " " * (BAR_WIDTH - filled)
        self.stderr.write(f"\r[{bar}] {done}/{total}", ending="")
        if done >= total:
            self.stderr.write("")
        self.stderr.flush()


def _instant(option: str, value: str, zone: ZoneInfo) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(
            f"{option} {value!r} is not an ISO 8601 date or time (2026-05-01T00:00:00Z)."
        ) from None
    read_in = ""
    if parsed.utcoffset() is None:
        parsed, read_in = parsed.replace(tzinfo=zone), f" in {zone.key}"
    try:
        instant = parsed.astimezone(UTC)
    except OverflowError:  # a wall time of year 1 east of Greenwich, or 9999 west of it
        beyond = "before the year 1" if parsed.year == 1 else "after the year 9999"
        raise CommandError(
            f"{option} {value!r}{read_in} is {beyond} in UTC: it must fall within "
            f"{instants.RANGE} (UTC)."
        ) from None
    if not instants.in_range(instant):
        raise CommandError(
            f"{option} must fall within {instants.RANGE} (UTC), not {instant.isoformat()}."
        )
    return instant
