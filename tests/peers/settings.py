"""The suite's settings with the peers installed: django-celery-beat, django-q2 and a Celery app.

Used by ``make test-peers`` (``--ds=tests.peers.settings``), in a venv with the ``peers`` extra.
"""

from datetime import timedelta

from celery.schedules import crontab

from tests.settings import *  # noqa: F403
from tests.settings import CADENCE_EXECUTORS, INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_celery_beat", "django_q"]
# ``@app.task`` on an app not yet finalized is a lazy proxy defined in celery.local: a pattern
# does not cover it, its exact path does (``@shared_task`` tasks match the pattern).
CADENCE_EXECUTORS = [
    *CADENCE_EXECUTORS,
    "tests.peers.tasks.*",
    "tests.peers.tasks.bound_export",
    "tests.peers.tasks.renamed",
]

CELERY_TIMEZONE = "Europe/Paris"
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BEAT_SCHEDULE = {
    "weekday-report": {
        "task": "tests.peers.tasks.send_report",
        "schedule": crontab(minute=0, hour="*/3", day_of_week="mon-fri"),
        "args": ("ops@example.com",),
    },
    "every-30-seconds": {"task": "tests.peers.tasks.ping", "schedule": 30.0},
    "every-ten-minutes": {
        "task": "tests.peers.tasks.ping",
        "schedule": timedelta(minutes=10),
        "options": {"expires": 600, "queue": "slow"},
    },
}

Q_CLUSTER = {
    "name": "peers",
    "orm": "default",
    "time_zone": "Europe/Paris",
    "timeout": 60,
    "retry": 120,
}
