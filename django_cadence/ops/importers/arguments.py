"""Positional arguments named from the task's signature, since a payload holds keywords only.

The task is found by its path (importing its module, as the worker that runs it would), or
through the Celery app's registry for a task registered under another name. A Celery task
object runs its ``run`` method: a ``bind=True`` task's ``self`` is already bound there.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string


class CannotName(ValueError):
    """The positional arguments cannot be given names; the message says why."""


def find_callable(path: str) -> tuple[str, Callable[..., Any] | None]:
    """The importable dotted path of a task or function, and the callable (``None``: not found).

    A Celery task registered under a name that is not its path (``@app.task(name="x")``) is
    found in the current app's registry and given the path of the function it wraps.
    """
    try:
        func = import_string(path)
    except ImportError:
        func = None
    if callable(func):
        return path, func
    task = _celery_task(path)
    if task is None:
        return path, None
    module, name = getattr(task, "__module__", ""), getattr(task, "__name__", "")
    return (f"{module}.{name}" if module and name else path), task


def _celery_task(name: str) -> Any:
    try:
        from celery import current_app
    except ImportError:
        return None
    return current_app.tasks.get(name)


def as_keywords(
    path: str, func: Callable[..., Any] | None, args: list[Any], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """``kwargs`` with each of ``args`` under its parameter's name; ``CannotName`` if not sure."""
    if not args:
        return dict(kwargs)
    if func is None:
        raise CannotName(
            f"its positional arguments {args!r} cannot be named: {path} cannot be imported here "
            "to read its signature. Run the import where the task's module imports, or give "
            "them as keyword arguments."
        )
    target = getattr(func, "run", func)  # a Celery task's own function, self already bound
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise CannotName(f"the signature of {path} cannot be read ({exc}).") from None
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(args) > len(positional):
        raise CannotName(
            f"{len(args)} positional arguments for {path}{signature}, which names only "
            f"{len(positional)}: the rest would go to *args, which a payload cannot fill."
        )
    named = {param.name: value for param, value in zip(positional, args, strict=False)}
    only = [p.name for p in positional[: len(args)] if p.kind is p.POSITIONAL_ONLY]
    if only:
        raise CannotName(f"{path} takes {', '.join(only)} positionally only.")
    clash = sorted(set(named) & set(kwargs))
    if clash:
        raise CannotName(f"{', '.join(clash)} given both positionally and by keyword.")
    return {**named, **kwargs}
