"""A task defined outside ``tests.tasks``: re-exported there, it must not run as tests.tasks.*."""

from __future__ import annotations

try:
    from django.tasks import task
except ImportError:
    from django_tasks import task


@task
def elsewhere() -> str:
    return "elsewhere"
