"""``manage.py cadence_import celery-beat|django-q [--write] [--paused] [--settings-block]``.

Reads another scheduler's schedules and prints the diff: what would be created, what is
already here, and what is refused with its reason. ``--write`` creates them (a name already
here is never changed, so a second run adds nothing); ``--settings-block`` prints them as a
``CADENCE_SCHEDULES`` block to paste instead.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_cadence import store
from django_cadence.ops import importers


class Command(BaseCommand):
    help = (
        "Import schedules from django-celery-beat (PeriodicTask rows and CELERY_BEAT_SCHEDULE) "
        "or django-q2; prints the diff and writes nothing without --write."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", choices=sorted(importers.sources()))
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            "--write", action="store_true", help="Create the schedules (existing names are kept)."
        )
        mode.add_argument(
            "--settings-block",
            action="store_true",
            help="Print a CADENCE_SCHEDULES block to paste into settings; write nothing.",
        )
        parser.add_argument(
            "--paused",
            action="store_true",
            help="Create them paused, to run beside the old scheduler until the switch.",
        )
        parser.add_argument(
            "--database",
            default=None,
            help="Cadence's database alias (the default, where DATABASE_ROUTERS send "
            "django_cadence); any other is refused.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["source"]
        try:
            using = store.alias_or_refuse(options["database"])
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        try:
            plan = importers.plan(source, using)
        except ImportError as exc:
            raise CommandError(f"{source} cannot be read here: {exc}") from None
        if options["settings_block"]:
            self.stdout.write(plan.settings_block(paused=options["paused"]), ending="")
            return
        for line in plan.lines(paused=options["paused"]):
            self.stdout.write(line)
        if options["write"]:
            importers.write(plan, paused=options["paused"], using=using)
        self.stdout.write(plan.summary(written=options["write"]))
