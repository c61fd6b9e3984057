"""Schedules of other schedulers, brought over: ``manage.py cadence_import <source>``."""

from __future__ import annotations

from collections.abc import Callable

from .plan import Found, ImportPlan, Refused, build_plan, write

Collect = Callable[[], tuple[list[Found], list[Refused]]]


def sources() -> dict[str, Collect]:
    """The sources by name; each module imports its peer only when asked."""
    from . import celery_beat, django_q

    return {"celery-beat": celery_beat.collect, "django-q": django_q.collect}


def plan(source: str, using: str | None = None) -> ImportPlan:
    """What importing ``source`` would create, keep and refuse."""
    found, refused = sources()[source]()
    return build_plan(source, found, refused, using)


__all__ = ["Found", "ImportPlan", "Refused", "build_plan", "plan", "sources", "write"]
