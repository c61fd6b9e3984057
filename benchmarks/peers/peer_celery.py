"""Celery beat with django-celery-beat (DatabaseScheduler on PostgreSQL), Redis broker.

Runner: ``run_celery.py`` (its docstring has the configuration): a beat process and one
worker process (thread pool of C), both children of the runner.
"""

from .base import Peer


class CeleryBeat(Peer):
    name = "celery-beat"
    requirements = (
        "Django>=5.2,<6",
        "celery[redis]>=5.3,<6",
        "django-celery-beat>=2.6",
        "psycopg[binary]>=3.1",
    )
    script = "run_celery.py"
    extra_lead = 10.0  # the worker and beat start after the schedules are written

    @classmethod
    def venv(cls):
        from .base import VENVS

        return VENVS / "celery"
