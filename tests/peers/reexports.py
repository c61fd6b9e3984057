"""Celery tasks imported into another module: its pattern must not make them runnable."""

from .tasks import bound_export, send_report

__all__ = ["bound_export", "send_report"]
