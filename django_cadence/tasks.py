"""Run a Django task on a schedule: the ``django_cadence.tasks.enqueue`` executor.

django-cadence decides *when*; Django's Tasks framework (``django.tasks`` on Django 6, the
``django-tasks`` backport, ``django_tasks``, on 5.2) decides *where*: the executor enqueues the
task through the backend the project configured in ``TASKS``. Its payload is
``{"task": "myapp.tasks.send_report", "args": [...], "kwargs": {...}}`` (``backend``,
``queue_name`` and ``priority`` optional); in ``CADENCE_SCHEDULES`` a periodic task is one line:
``{"send-report": {"cron": "*/5 * * * *", "task": "myapp.tasks.send_report"}}``.

The task path is an allow-list decision like an executor's, checked on the string before
anything is imported: it must match ``CADENCE_TASKS`` (or ``CADENCE_EXECUTORS``) exactly or by a
``prefix.*`` pattern, and the object it names must be a task of either framework.

Idempotency: no backend of either framework accepts an idempotency key as an option, so the
attempt's key (stable across retries of one occurrence) goes in the task's keyword arguments
when its function declares an ``idempotency_key`` parameter. A retry after a lost enqueue
result may enqueue the task twice; a task that must not run twice uses that key.
"""

from __future__ import annotations

import importlib
import inspect
import keyword
from typing import Any

from .conf import cadence_settings
from .exceptions import CadenceError, Permanent
from .executors.calling import AttemptContext
from .executors.registry import job

IDEMPOTENCY_KEY = "idempotency_key"
TASK_EXECUTOR = "django_cadence.tasks.enqueue"


class TaskNotUsable(CadenceError, ValueError):
    """The task path is not allowed, cannot be imported, or does not name a task."""


def task_classes() -> tuple[type, ...]:
    """The ``Task`` classes importable here: Django 6's and the backport's, if installed."""
    found: list[type] = []
    try:
        from django.tasks import Task
    except ImportError:
        pass
    else:
        found.append(Task)
    try:
        from django_tasks.base import Task as BackportTask
    except ImportError:
        pass
    else:
        found.append(BackportTask)
    return tuple(found)


def _is_dotted_path(path: object) -> bool:
    if not isinstance(path, str) or not 0 < len(path) <= 255 or "." not in path:
        return False
    return all(
        part.isidentifier() and not keyword.iskeyword(part) and not part.startswith("__")
        for part in path.split(".")
    )


def _patterns() -> tuple[str, ...]:
    return (*cadence_settings.TASKS, *cadence_settings.EXECUTORS)


def allowed_by(path: str) -> str | None:
    """The ``CADENCE_TASKS`` / ``CADENCE_EXECUTORS`` entry allowing ``path``, or None."""
    for pattern in _patterns():
        if pattern == path:
            return pattern
        if pattern.endswith(".*") and path.startswith(pattern[:-1]) and len(path) > len(pattern):
            return pattern
    return None


def check_task(path: object) -> Any:
    """The task object behind an allowed path; ``TaskNotUsable`` says what is wrong.

    Nothing is imported unless the path is allowed. A ``prefix.*`` pattern allows only tasks
    whose function is defined below the prefix, so a task imported into an allowed module
    from elsewhere does not become runnable through it.
    """
    shown = repr(path)[:120]
    if not _is_dotted_path(path):
        raise TaskNotUsable(f"Task {shown} must be a dotted path such as 'myapp.tasks.send'.")
    assert isinstance(path, str)  # a dotted path is a string
    pattern = allowed_by(path)
    if pattern is None:
        raise TaskNotUsable(
            f"Task {shown} is not allowed: it matches no pattern in CADENCE_TASKS "
            "(or CADENCE_EXECUTORS)."
        )
    classes = task_classes()
    if not classes:
        raise TaskNotUsable(
            "Django's Tasks framework is not installed: use Django 6, or on Django 5.2 "
            'pip install "django-cadence-scheduler[tasks]" (the django-tasks backport).'
        )
    module_path, name = path.rsplit(".", 1)
    try:
        found: Any = getattr(importlib.import_module(module_path), name)
    except (ImportError, AttributeError) as exc:
        raise TaskNotUsable(f"Task {shown} cannot be imported ({exc}).") from exc
    if not isinstance(found, classes):
        raise TaskNotUsable(
            f"Task {shown} names a {type(found).__name__}, not a task; decorate the function "
            "with @task from django.tasks (or django_tasks)."
        )
    defined_in = getattr(getattr(found, "func", None), "__module__", "")
    if pattern.endswith(".*") and not f"{defined_in}.".startswith(pattern[:-1]):
        raise TaskNotUsable(
            f"Task {shown} is defined in {defined_in!r}, outside the pattern {pattern!r} that "
            "allows its path; list its exact path in CADENCE_TASKS."
        )
    return found


PAYLOAD_KEYS = ("task", "args", "kwargs", "backend", "queue_name", "priority")


def check_payload(payload: dict[str, Any]) -> None:
    """A schedule's ``enqueue`` payload, checked when the schedule is saved rather than when it
    first runs: an allowed task, and ``args`` and ``kwargs`` its function accepts.

    ``TaskNotUsable`` names what is wrong and what to do.
    """
    unknown = sorted(set(payload) - set(PAYLOAD_KEYS))
    if unknown:
        raise TaskNotUsable(
            f"The payload of django_cadence.tasks.enqueue takes {', '.join(PAYLOAD_KEYS)}; "
            f"not {', '.join(unknown)}: put the task's own arguments in kwargs."
        )
    if "task" not in payload:
        raise TaskNotUsable(
            'The payload needs the task to enqueue: {"task": "myapp.tasks.send", "kwargs": {...}}.'
        )
    found = check_task(payload["task"])
    args, kwargs = payload.get("args") or [], payload.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise TaskNotUsable("The payload's args must be a JSON list and its kwargs an object.")
    bound = dict(kwargs)
    if _accepts_idempotency_key(found):
        bound.setdefault(IDEMPOTENCY_KEY, "")  # the engine passes it at run time
    try:
        signature = inspect.signature(found.func)
    except (TypeError, ValueError):
        return  # a callable without a signature: checked when it runs
    try:
        signature.bind(*args, **bound)
    except TypeError as exc:
        takes = ", ".join(name for name in signature.parameters if name != IDEMPOTENCY_KEY)
        raise TaskNotUsable(
            f"Task {payload['task']!r} cannot take these args and kwargs ({exc}); it takes "
            f"{takes or 'no arguments'}."
        ) from None


def _accepts_idempotency_key(task: Any) -> bool:
    try:
        parameters = inspect.signature(task.func).parameters
    except (TypeError, ValueError):
        return False
    parameter = parameters.get(IDEMPOTENCY_KEY)
    return parameter is not None and parameter.kind in (
        parameter.POSITIONAL_OR_KEYWORD,
        parameter.KEYWORD_ONLY,
    )


@job
def enqueue(
    task: str,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    backend: str | None = None,
    queue_name: str | None = None,
    priority: int | None = None,
    context: AttemptContext | None = None,
) -> dict[str, Any]:
    """Enqueue ``task`` through its configured backend; the outcome is the task result's id.

    An unusable task is a ``Permanent`` failure (a retry cannot fix the settings); an error
    of the backend (a queue that is down) is an ordinary one, retried with backoff.
    """
    try:
        found = check_task(task)
    except TaskNotUsable as exc:
        raise Permanent(str(exc)) from exc
    if not isinstance(args, list | None) or not isinstance(kwargs, dict | None):
        raise Permanent("The payload's args must be a list and its kwargs an object.")
    options = {"backend": backend, "queue_name": queue_name, "priority": priority}
    if any(value is not None for value in options.values()):
        found = found.using(**options)
    call_kwargs = dict(kwargs or {})
    if context is not None and _accepts_idempotency_key(found):
        call_kwargs.setdefault(IDEMPOTENCY_KEY, context.idempotency_key)
    result = found.enqueue(*(args or []), **call_kwargs)
    return {
        "task": task,
        "result_id": str(result.id),
        "status": str(result.status),
        "backend": str(result.backend),
        "queue_name": str(found.queue_name),
    }
