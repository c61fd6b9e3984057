"""django-cadence's own executors, registered by the ``jobs.py`` autodiscovery at start-up."""

from .tasks import enqueue

__all__ = ["enqueue"]
