"""Django tasks for the ``django_cadence.tasks.enqueue`` tests (allowed by ``tests.tasks.*``).

Django 6 has the framework as ``django.tasks``; on 5.2 the ``django-tasks`` backport
provides ``django_tasks``.
"""

from __future__ import annotations

try:
    from django.tasks import task

    FRAMEWORK = "django.tasks"
except ImportError:
    from django_tasks import task

    FRAMEWORK = "django_tasks"

from tests.more_tasks import elsewhere as reexported  # noqa: F401 - defined outside this module

DUMMY_BACKEND = f"{FRAMEWORK}.backends.dummy.DummyBackend"
IMMEDIATE_BACKEND = f"{FRAMEWORK}.backends.immediate.ImmediateBackend"


@task
def send_report(recipient: str, idempotency_key: str = "") -> str:
    """Accepts the attempt's idempotency key, so the scheduler passes it."""
    return f"sent to {recipient} ({idempotency_key})"


@task
def double(x: int) -> int:
    return 2 * x


def not_a_task() -> None:
    """A plain function: the tasks executor refuses it."""
