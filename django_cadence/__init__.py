"""django-cadence: durable cron, interval and one-shot jobs for Django.

The public names are importable from here without touching the models at import time, so
``from django_cadence import job`` works in any app's ``jobs.py``.
"""

from .exceptions import CadenceError, Permanent
from .executors import job

__all__ = ["CadenceError", "Permanent", "job"]
