"""The Celery app of the Celery beat peer: Django settings, Redis broker, and its scheduler.

Imported by the runner, the worker and beat (``celery -A benchmarks.peers.celery_app``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import django
from django.conf import settings

if not settings.configured:
    settings.configure(
        SECRET_KEY="bench",
        USE_TZ=True,
        TIME_ZONE="UTC",
        INSTALLED_APPS=["django.contrib.contenttypes", "django_celery_beat"],
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "cadence_bench",
                "USER": "postgres",
                "HOST": "127.0.0.1",
                "PORT": "5432",
            }
        },
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()

from celery import Celery
from django_celery_beat.schedulers import DatabaseScheduler

from benchmarks.peers import djq_tasks

app = Celery("bench", broker="redis://127.0.0.1:6379/15")
app.conf.update(
    timezone="UTC",
    enable_utc=True,
    task_default_queue="bench",
    worker_prefetch_multiplier=4,
    broker_connection_retry_on_startup=True,
)


@app.task(name="bench.record")
def record(name: str, due: str = "") -> None:
    djq_tasks.record(name, due)


@app.task(name="bench.noop")
def noop(name: str = "", due: str = "") -> None:
    return None


class BenchScheduler(DatabaseScheduler):
    """django-celery-beat's DatabaseScheduler, adding the instant it found each entry due.

    Clocked one-offs are due at their ``clocked_time``; interval entries at
    ``last_run_at + run_every`` (beat's own rule: intervals run from the previous send).
    """

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        model = entry.model
        if model.clocked_id:
            due = model.clocked.clocked_time
        else:
            last = entry.last_run_at or datetime.now(UTC)
            due = last + entry.schedule.run_every
        saved = entry.kwargs
        entry.kwargs = {**(saved or {}), "due": due.isoformat()}
        try:
            return super().apply_async(entry, producer=producer, advance=advance, **kwargs)
        finally:
            entry.kwargs = saved
