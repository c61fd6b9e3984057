"""django-cadence: durable cron, interval and one-shot jobs for Django.

``from django_cadence import job, Permanent, trigger, pause, resume, retry``. The operations
are imported lazily, so this package can be imported (e.g. by an app's ``jobs.py``) before
the models are ready.
"""

from typing import Any

from .exceptions import CadenceError, Permanent
from .executors.registry import job

_SERVICES = ("trigger", "pause", "resume", "retry", "cancel")

__all__ = ["CadenceError", "Permanent", "cancel", "job", "pause", "resume", "retry", "trigger"]


def __getattr__(name: str) -> Any:
    if name in _SERVICES:
        from . import services

        return getattr(services, name)
    raise AttributeError(f"module 'django_cadence' has no attribute {name!r}")
