"""Create (or bring back to their demo settings) the example project's schedules."""

from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from django_cadence.models import Schedule

JOBS = "example_project.demo.jobs"

DEMO_SCHEDULES = {
    "hello-every-10s": {
        "kind": "interval",
        "interval": timedelta(seconds=10),
        "executor": f"{JOBS}.say_hello",
        "payload": {"name": "cadence"},
    },
    "flaky-every-15s": {
        "kind": "interval",
        "interval": timedelta(seconds=15),
        "executor": f"{JOBS}.flaky",
        "payload": {"failure_rate": 0.4},
        "overlap": "queue",
    },
    "long-every-minute": {
        "kind": "cron",
        "cron": "* * * * *",
        "executor": f"{JOBS}.long_running",
        "payload": {"seconds": 75},
        "overlap": "skip_if_running",
    },
    "nightly-new-york": {
        "kind": "cron",
        "cron": "30 2 * * *",
        "timezone": "America/New_York",
        "executor": f"{JOBS}.say_hello",
        "payload": {"name": "night owl"},
    },
}


class Command(BaseCommand):
    help = "Create the demo schedules of the example project (idempotent)."

    def handle(self, *args, **options) -> None:
        for name, fields in DEMO_SCHEDULES.items():
            _, created = Schedule.objects.update_or_create(name=name, defaults=fields)
            self.stdout.write(f"{'created' if created else 'kept'} schedule {name}")
        if not Schedule.objects.filter(name="once-soon").exists():
            Schedule.objects.create(
                name="once-soon",
                kind="once",
                run_at=timezone.now() + timedelta(seconds=30),
                executor=f"{JOBS}.say_hello",
                payload={"name": "one-shot"},
            )
            self.stdout.write("created schedule once-soon")
