"""``manage.py cadence_prune [--older-than 30d] [--keep N] [--include-dead-letters] [--dry-run]``.

Deletes finished attempts that a retention rule lets go, in batches; pending and running
attempts are never touched, dead letters only with ``--include-dead-letters``. The two rules
are independent: an attempt goes when it finished more than ``--older-than`` ago, or when it
is not among the newest ``--keep`` finished attempts of its schedule. Workers that stopped
cleanly more than a day ago go too, and, under ``--older-than``, notification episodes
resolved longer ago than that (with their messages).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_cadence.clock import default_clock
from django_cadence.management.arguments import age, count, positive_int
from django_cadence.ops.retention import (
    Retention,
    prune,
    prune_resolved_notices,
    prune_stopped_workers,
)


class Command(BaseCommand):
    help = "Delete finished attempts older than an age and/or beyond the newest N per schedule."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than", type=age, default=None, help="Age such as 30d, 12h, 90m, 2w."
        )
        parser.add_argument(
            "--keep", type=count, default=None, help="Finished attempts to keep per schedule."
        )
        parser.add_argument(
            "--include-dead-letters",
            action="store_true",
            help="Prune dead letters too (kept by default: an operator decides on them).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Count; delete nothing.")
        parser.add_argument(
            "--batch-size", type=positive_int, default=1000, help="Rows per DELETE."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        retention = Retention(
            older_than=options["older_than"],
            keep=options["keep"],
            include_dead_letters=options["include_dead_letters"],
        )
        if retention.older_than is None and retention.keep is None:
            raise CommandError("Nothing to prune by: give --older-than, --keep, or both.")
        dry_run = options["dry_run"]
        now = default_clock().now()
        counts = prune(retention, now, dry_run=dry_run, batch_size=options["batch_size"])
        workers = prune_stopped_workers(now, dry_run=dry_run)
        episodes = 0
        if retention.older_than is not None:
            episodes = prune_resolved_notices(now, retention.older_than, dry_run=dry_run)
        rules = []
        if retention.older_than is not None:
            rules.append(f"{counts.by_age} finished more than {_age(retention.older_than)} ago")
        if retention.keep is not None:
            rules.append(f"{counts.by_count} beyond the newest {retention.keep} per schedule")
        verb = "would delete" if dry_run else "deleted"
        kept = "" if retention.include_dead_letters else "; dead letters kept"
        self.stdout.write(f"{verb} {counts.total} finished attempt(s): {', '.join(rules)}{kept}")
        if workers:
            self.stdout.write(f"{verb} {workers} worker(s) stopped more than a day ago")
        if episodes:
            age = _age(retention.older_than) if retention.older_than else ""
            self.stdout.write(f"{verb} {episodes} notification episode(s) resolved over {age} ago")


def _age(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} seconds"
