"""``manage.py cadence_sync [--dry-run]``: make the schedules match what code declares.

The same reconcile ``run_cadence`` does at start, run as a deploy step: it prints a diff
(``+ created``, ``~ updated field: old -> new``, ``- disabled``) and fails, changing nothing,
when a declared schedule is invalid.
"""

from __future__ import annotations

import socket
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_cadence.clock import default_clock
from django_cadence.ops.reconcile import InvalidDeclarations, reconcile


class Command(BaseCommand):
    help = (
        "Create, update and disable schedules to match CADENCE_SCHEDULES and "
        "@job(schedule=...); prints what changed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Print what would change; write nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        try:
            result = reconcile(
                default_clock().now(),
                dry_run=dry_run,
                holder=f"cadence_sync@{socket.gethostname()}",
            )
        except InvalidDeclarations as exc:
            lines = "\n".join(f"  {error}" for error in exc.errors)
            raise CommandError(
                f"{len(exc.errors)} declared schedule(s) are invalid; nothing was changed:\n{lines}"
            ) from None
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        for line in result.lines():
            self.stdout.write(line)
        prefix = "dry run: " if dry_run else ""
        self.stdout.write(f"{prefix}{result.summary()}")
