"""The ``@job`` registry: functions registered as executors, with their options.

A registered function is allowed by its registration alone (``allow_list.py``); its options
override the schedule's defaults for every attempt that runs it (``claims.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from django.utils.module_loading import autodiscover_modules

from ..schedule.queues import InvalidQueue, check_queue_name
from .paths import is_dotted_path

F = TypeVar("F", bound=Callable[..., Any])

DELIVERIES = ("at_least_once", "at_most_once", "atomic")
ISOLATIONS = ("thread", "process")


@dataclass(frozen=True)
class JobOptions:
    """Per-job overrides; ``None`` means "the schedule's value, else the CADENCE_* default"."""

    path: str
    max_attempts: int | None = None
    retry_base: timedelta | None = None
    retry_cap: timedelta | None = None
    max_runtime: timedelta | None = None
    delivery: str = "at_least_once"
    isolation: str = "thread"
    # The queue of the schedules that run it and name no queue themselves (None: "default").
    queue: str | None = None
    # A schedule declared next to the job (reconcile.py): its fields, the executor implied.
    schedule: dict[str, Any] | None = field(default=None, hash=False)


_registry: dict[str, JobOptions] = {}
_functions: dict[str, Callable[..., Any]] = {}


def _duration(name: str, value: Any) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise ValueError(f"@job({name}=...) must be a timedelta or seconds, not {value!r}.")
    delta = value if isinstance(value, timedelta) else timedelta(seconds=value)
    if delta <= timedelta(0):
        raise ValueError(f"@job({name}=...) must be more than zero seconds, not {value!r}.")
    return delta


def _queue(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return check_queue_name(value)
    except InvalidQueue as exc:
        raise ValueError(f"@job(queue=...): {exc}") from None


def _choice(name: str, value: Any, accepted: tuple[str, ...]) -> str:
    if value not in accepted:
        raise ValueError(f"@job({name}=...) must be one of {', '.join(accepted)}; not {value!r}.")
    return value


def _job_path(func: Any) -> str:
    if inspect.isclass(func) or not callable(func):
        raise TypeError(f"@job decorates functions, not {func!r}.")
    module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
    if not module or not qualname:
        raise TypeError(f"@job needs a module-level function; {func!r} has no dotted path.")
    if "<locals>" in qualname or "." in qualname:
        raise TypeError(
            f"@job needs a module-level function, not {module}.{qualname}: a nested function "
            "or a method cannot be imported again by its dotted path."
        )
    path = f"{module}.{qualname}"
    if not is_dotted_path(path):
        raise TypeError(f"@job cannot register {path!r}: it cannot be imported by that path.")
    return path


def _job_schedule(value: Any) -> dict[str, Any] | None:
    """``"*/5 * * * *"`` or a dict of fields; each field is checked when it is reconciled."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"cron": value}
    if not isinstance(value, dict):
        raise ValueError(f"@job(schedule=...) must be a cron string or a dict, not {value!r}.")
    implied = sorted({"executor", "task"} & value.keys())
    if implied:
        raise ValueError(
            f"@job(schedule=...) must not set {', '.join(implied)}: the job is the executor."
        )
    return dict(value)


def job(
    func: F | None = None,
    /,
    *,
    max_attempts: int | None = None,
    retry_base: timedelta | float | None = None,
    retry_cap: timedelta | float | None = None,
    max_runtime: timedelta | float | None = None,
    delivery: str = "at_least_once",
    isolation: str = "thread",
    schedule: str | dict[str, Any] | None = None,
    queue: str | None = None,
) -> Any:
    """Register a module-level function as an executor (allowed by registration alone).

    Usable bare (``@job``) or with options; the function is returned unchanged, with its
    :class:`JobOptions` as ``func.cadence_job``. Bad options raise ``ValueError`` at once.
    ``schedule`` declares a schedule named after the job's path that runs it: a cron string
    or a dict of schedule fields; ``run_cadence`` and ``cadence_sync`` create and update it.
    ``queue`` is the queue of every schedule that runs the job without naming one.
    """
    options = _checked_options(
        max_attempts=max_attempts,
        retry_base=retry_base,
        retry_cap=retry_cap,
        max_runtime=max_runtime,
        delivery=delivery,
        isolation=isolation,
        schedule=schedule,
        queue=queue,
    )

    def register(func: F) -> F:
        path = _job_path(func)
        if delivery == "atomic" and inspect.iscoroutinefunction(func):
            raise ValueError(
                f'@job(delivery="atomic") cannot wrap async def {path}: its database work '
                "would run outside the engine's transaction."
            )
        job_options = JobOptions(path=path, **options)
        _registry[path] = job_options
        _functions[path] = func
        func.cadence_job = job_options  # type: ignore[attr-defined]
        return func

    return register if func is None else register(func)


def _checked_options(
    *,
    max_attempts: int | None,
    retry_base: timedelta | float | None,
    retry_cap: timedelta | float | None,
    max_runtime: timedelta | float | None,
    delivery: str,
    isolation: str,
    schedule: str | dict[str, Any] | None,
    queue: str | None = None,
) -> dict[str, Any]:
    """``@job``'s options, normalised; ``ValueError`` naming the first one that is wrong."""
    if max_attempts is not None and (type(max_attempts) is not int or max_attempts < 1):
        raise ValueError(f"@job(max_attempts=...) must be an integer >= 1, not {max_attempts!r}.")
    base, cap = _duration("retry_base", retry_base), _duration("retry_cap", retry_cap)
    options = {
        "max_attempts": max_attempts,
        "retry_base": base,
        "retry_cap": cap,
        "max_runtime": _duration("max_runtime", max_runtime),
        "delivery": _choice("delivery", delivery, DELIVERIES),
        "isolation": _choice("isolation", isolation, ISOLATIONS),
        "schedule": _job_schedule(schedule),
        "queue": _queue(queue),
    }
    if base is not None and cap is not None and cap < base:
        raise ValueError("@job(retry_cap=...) must not be less than retry_base.")
    if delivery == "atomic" and isolation == "process":
        raise ValueError(
            '@job(delivery="atomic") runs inside the engine\'s database transaction, which '
            'a child process cannot share; use isolation="thread".'
        )
    return options


def registered_jobs() -> dict[str, JobOptions]:
    """A copy of the registry: dotted path -> options."""
    return dict(_registry)


def autodiscover() -> None:
    """Import every installed app's ``jobs`` module, so its ``@job`` functions register."""
    autodiscover_modules("jobs")


def registered_options(path: str) -> JobOptions | None:
    """The options registered under ``path`` with ``@job``, if any."""
    return _registry.get(path)


def registered_function(path: str) -> Callable[..., Any] | None:
    """The function registered under ``path`` with ``@job``, if any."""
    return _functions.get(path)
