"""The suite's settings with the peers installed: django-celery-beat, django-q2 and a Celery app.

Used by ``make test-peers`` (``--ds=tests.peers.settings``), in a venv with the ``peers`` extra.
"""

from datetime import timedelta

from celery.schedules import crontab

from tests.settings import *  # noqa: F403
from tests.settings import CADENCE_EXECUTORS, INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_celery_beat", "django_q"]
# One pattern, as a project moving from Celery beat writes it: it covers ``@shared_task`` and
# ``@app.task`` tasks alike (the latter are lazy proxies, looked through to their module).
CADENCE_EXECUTORS = [*CADENCE_EXECUTORS, "tests.peers.tasks.*"]

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
