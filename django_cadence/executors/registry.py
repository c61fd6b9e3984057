"""Executors: the allow-list, the ``@job`` registry and resolution of dotted paths.

A schedule's executor is a dotted path that anyone with edit rights on a schedule can type,
so the allow-list is checked on the *string* before anything is imported: importing a module
runs its top-level code, and ``import_string("os.system")`` alone would already hand out a
way to run arbitrary commands. Only a path that is registered with ``@job`` or matches a
``CADENCE_EXECUTORS`` pattern is ever imported, and the check runs again on every
``resolve()``, so a path removed from the settings stops running even if it was imported.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from django.utils.module_loading import autodiscover_modules

from ..conf import cadence_settings
from ..exceptions import ExecutorNotAllowed, ExecutorNotFound
from . import calling

F = TypeVar("F", bound=Callable[..., Any])

DELIVERIES = ("at_least_once", "at_most_once", "atomic")
ISOLATIONS = ("thread", "process")
MAX_PATH_LENGTH = 255  # Schedule.executor's max_length

_PATH_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


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
    # A schedule declared next to the job (reconcile.py): its fields, the executor implied.
    schedule: dict[str, Any] | None = field(default=None, hash=False)


_registry: dict[str, JobOptions] = {}
_functions: dict[str, Callable[..., Any]] = {}
_imported: dict[str, Callable[..., Any]] = {}


def _duration(name: str, value: Any) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise ValueError(f"@job({name}=...) must be a timedelta or seconds, not {value!r}.")
    delta = value if isinstance(value, timedelta) else timedelta(seconds=value)
    if delta <= timedelta(0):
        raise ValueError(f"@job({name}=...) must be more than zero seconds, not {value!r}.")
    return delta


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
    if not _is_dotted_path(path):
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
) -> Any:
    """Register a module-level function as an executor (allowed by registration alone).

    Usable bare (``@job``) or with options; the function is returned unchanged, with its
    :class:`JobOptions` as ``func.cadence_job``. Bad options raise ``ValueError`` at once.
    ``schedule`` declares a schedule named after the job's path that runs it: a cron string
    or a dict of schedule fields; ``run_cadence`` and ``cadence_sync`` create and update it.
    """
    options = _checked_options(
        max_attempts=max_attempts,
        retry_base=retry_base,
        retry_cap=retry_cap,
        max_runtime=max_runtime,
        delivery=delivery,
        isolation=isolation,
        schedule=schedule,
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


def job_options(path: str) -> JobOptions:
    """The registered options of an allowed path, or the defaults for a pattern-allowed one.

    An unregistered path's module is imported first, so its ``@job`` has run even in a fresh
    worker that recovers an ``at_most_once`` attempt before anything else imported it.
    """
    check_allowed(path)
    if path not in _registry:
        with contextlib.suppress(ExecutorNotFound):
            resolve(path)
    return _registry.get(path) or JobOptions(path=path)


def autodiscover() -> None:
    """Import every installed app's ``jobs`` module, so its ``@job`` functions register."""
    autodiscover_modules("jobs")


# The allow-list: pure string matching, nothing is imported here.


# Both checks run for every try (claim, run, recovery), so their answers are cached: they
# depend only on the path and on the patterns, and the patterns are part of the key.


def _is_dotted_path(path: object) -> bool:
    return isinstance(path, str) and _is_dotted_str(path)


@functools.lru_cache(maxsize=4096)
def _is_dotted_str(path: str) -> bool:
    if len(path) > MAX_PATH_LENGTH or not _PATH_RE.fullmatch(path):
        return False
    return not any(part.startswith("__") or keyword.iskeyword(part) for part in path.split("."))


def _matches_prefix(path: str) -> bool:
    """``prefix.*`` matches every path strictly below ``prefix``, never ``prefix`` itself."""
    return _matches_prefix_of(path, cadence_settings.EXECUTORS)


@functools.lru_cache(maxsize=4096)
def _matches_prefix_of(path: str, patterns: tuple[str, ...]) -> bool:
    return any(
        pattern.endswith(".*")
        and _is_dotted_path(f"{pattern[:-2]}.x")
        and path.startswith(pattern[:-1])
        for pattern in patterns
    )


def invalid_patterns() -> list[str]:
    """The CADENCE_EXECUTORS entries that can never match (for a system check)."""
    return [
        p
        for p in cadence_settings.EXECUTORS
        if not _is_dotted_path(f"{p[:-2]}.x" if p.endswith(".*") else p)
    ]


def is_allowed(path: object) -> bool:
    """Whether ``path`` may run: a plain dotted path, registered or matching a pattern."""
    return _is_dotted_path(path) and (
        path in _registry or path in cadence_settings.EXECUTORS or _matches_prefix(path)  # type: ignore[arg-type]
    )


def check_allowed(path: object) -> None:
    """Raise ``ExecutorNotAllowed`` unless ``path`` may run; never imports anything."""
    shown = repr(path)[:120]
    if not _is_dotted_path(path):
        raise ExecutorNotAllowed(
            f"Executor {shown} is not allowed: it must be a dotted path of Python identifiers "
            "such as 'myapp.jobs.send', registered with @job or listed in CADENCE_EXECUTORS."
        )
    if not is_allowed(path):
        raise ExecutorNotAllowed(
            f"Executor {shown} is not allowed: it is not registered with @job and matches no "
            "pattern in CADENCE_EXECUTORS."
        )


def resolve(path: str) -> Callable[..., Any]:
    """The callable behind an allowed path; the allow-list is checked on every call."""
    check_allowed(path)
    if path in _functions:
        return _functions[path]
    func = _imported.get(path)
    if func is None:
        func = _import(path)
        _imported[path] = func
    module = getattr(func, "__module__", None)
    if path not in cadence_settings.EXECUTORS and not (
        isinstance(module, str) and _matches_prefix(f"{module}.x")
    ):
        # ``from subprocess import run`` in myapp/jobs.py must not make myapp.jobs.run
        # runnable through "myapp.jobs.*"; an exact pattern or @job may still name it.
        raise ExecutorNotAllowed(
            f"Executor {path!r} is not allowed: it is defined in {module!r}, outside the "
            "CADENCE_EXECUTORS pattern it matches. List its exact path or register it with @job."
        )
    return func


def _import(path: str) -> Callable[..., Any]:
    module_path, name = path.rsplit(".", 1)
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        raise ExecutorNotFound(
            f"Executor {path!r}: cannot import {module_path!r} ({exc})."
        ) from exc
    try:
        func = getattr(module, name)
    except AttributeError:
        raise ExecutorNotFound(f"Executor {path!r}: {module_path!r} has no {name!r}.") from None
    if inspect.isclass(func) or not callable(func):
        raise ExecutorNotFound(
            f"Executor {path!r} names a {type(func).__name__}, not a function or callable object."
        )
    return func


def clear_cache() -> None:
    """Forget imported executors (registrations stay)."""
    _imported.clear()
    calling.clear_cache()
