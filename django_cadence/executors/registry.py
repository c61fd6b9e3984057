"""Executors: the allow-list, the ``@job`` registry, resolution and the call convention.

A schedule's executor is a dotted path that anyone with edit rights on a schedule can type,
so the allow-list is checked on the *string* before anything is imported: importing a module
runs its top-level code, and ``import_string("os.system")`` alone would already hand out a
way to run arbitrary commands. Only a path that is registered with ``@job`` or matches a
``CADENCE_EXECUTORS`` pattern is ever imported, and the check runs again on every
``resolve()``, so a path removed from the settings stops running even if it was imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import keyword
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from django.utils.module_loading import autodiscover_modules

from ..conf import cadence_settings
from ..exceptions import ExecutorNotAllowed, ExecutorNotFound, InvalidPayload

F = TypeVar("F", bound=Callable[..., Any])

DELIVERIES = ("at_least_once", "at_most_once", "atomic")
ISOLATIONS = ("thread", "process")
MAX_PATH_LENGTH = 255  # Schedule.executor's max_length
CONTEXT = "context"

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
    if max_attempts is not None and (type(max_attempts) is not int or max_attempts < 1):
        raise ValueError(f"@job(max_attempts=...) must be an integer >= 1, not {max_attempts!r}.")
    options = {
        "max_attempts": max_attempts,
        "retry_base": _duration("retry_base", retry_base),
        "retry_cap": _duration("retry_cap", retry_cap),
        "max_runtime": _duration("max_runtime", max_runtime),
        "delivery": _choice("delivery", delivery, DELIVERIES),
        "isolation": _choice("isolation", isolation, ISOLATIONS),
        "schedule": _job_schedule(schedule),
    }
    base, cap = options["retry_base"], options["retry_cap"]
    if base is not None and cap is not None and cap < base:
        raise ValueError("@job(retry_cap=...) must not be less than retry_base.")
    if delivery == "atomic" and isolation == "process":
        raise ValueError(
            '@job(delivery="atomic") runs inside the engine\'s database transaction, which '
            'a child process cannot share; use isolation="thread".'
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
    _call_info.cache_clear()


# The call convention.


@dataclass(frozen=True)
class AttemptContext:
    """What a job that declares a ``context`` parameter receives about its try."""

    attempt_id: int | None
    schedule_name: str
    occurrence_at: datetime
    try_number: int
    idempotency_key: str
    deadline: datetime | None = None
    cancel_event: threading.Event = field(
        default_factory=threading.Event, compare=False, repr=False
    )

    @property
    def cancelled(self) -> bool:
        """Set on timeout or replacement; a long job should poll it and return early."""
        return self.cancel_event.is_set()


def idempotency_key(schedule_id: object, occurrence_at: datetime, trigger: str) -> str:
    """``cadence:<schedule id>:<trigger>:<occurrence, UTC, microseconds>Z``; same for every try.

    Readable on purpose (an operator can match it in a payment provider's dashboard) and
    short (under 80 characters), which every external idempotency API accepts.
    """
    if occurrence_at.utcoffset() is None:
        raise ValueError(f"occurrence_at must be an aware datetime, not {occurrence_at!r}.")
    stamp = occurrence_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"cadence:{schedule_id}:{trigger}:{stamp}"


class _CallInfo(NamedTuple):
    params: tuple[inspect.Parameter, ...] | None  # None: no signature to check against
    wants_context: bool
    is_async: bool


@functools.lru_cache(maxsize=1024)
def _call_info(func: Callable[..., Any]) -> _CallInfo:
    try:
        params = tuple(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        params = None
    wants = any(
        p.name == CONTEXT and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        for p in params or ()
    )
    return _CallInfo(params, wants, inspect.iscoroutinefunction(func))


def _info(func: Callable[..., Any]) -> _CallInfo:
    try:
        return _call_info(func)
    except TypeError:  # an unhashable callable object
        return _call_info.__wrapped__(func)


def _describe(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    return f"{getattr(func, '__module__', '?')}.{name}"


def check_call(func: Callable[..., Any], payload: dict[str, Any]) -> None:
    """Raise ``InvalidPayload`` unless ``func(**payload[, context=...])`` binds."""
    if not isinstance(payload, dict):
        raise InvalidPayload(f"The payload must be a JSON object, not {type(payload).__name__}.")
    if CONTEXT in payload:
        raise InvalidPayload("The payload key 'context' is reserved for the attempt context.")
    info = _info(func)
    if info.params is None:
        return
    kinds = inspect.Parameter
    named = {
        p.name: p
        for p in info.params
        if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
    }
    required_positional = [
        p.name for p in info.params if p.kind == kinds.POSITIONAL_ONLY and p.default is p.empty
    ]
    if required_positional:
        raise InvalidPayload(
            f"Executor {_describe(func)} has positional-only parameter(s) "
            f"{_names(required_positional)}, which a payload cannot fill."
        )
    missing = [
        n for n, p in named.items() if p.default is p.empty and n != CONTEXT and n not in payload
    ]
    if missing:
        raise InvalidPayload(f"Executor {_describe(func)} needs {_names(missing)} in the payload.")
    if not any(p.kind == kinds.VAR_KEYWORD for p in info.params):
        unexpected = [key for key in payload if key not in named]
        if unexpected:
            raise InvalidPayload(
                f"Executor {_describe(func)} does not accept {_names(unexpected)}; it takes "
                f"{_names([n for n in named if n != CONTEXT]) or 'no arguments'}."
            )


def _names(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


def call(func: Callable[..., Any], payload: dict[str, Any], context: AttemptContext) -> Any:
    """Run ``func`` with the payload as keyword arguments; ``async def`` runs to completion.

    ``context=`` is passed only to a callable that declares a ``context`` parameter. Async
    executors get a fresh event loop in the calling thread (the engine's worker threads
    have none); a thread that already runs a loop cannot wait on them and gets an error.
    """
    if CONTEXT in payload:
        raise InvalidPayload("The payload key 'context' is reserved for the attempt context.")
    info = _info(func)
    kwargs = {**payload, CONTEXT: context} if info.wants_context else dict(payload)
    if info.is_async:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(func(**kwargs))
        raise RuntimeError(
            f"Executor {_describe(func)} is async and cannot run in a thread whose event loop "
            "is already running; the engine calls executors from worker threads."
        )
    result = func(**kwargs)
    return asyncio.run(_await(result)) if inspect.isawaitable(result) else result


async def _await(awaitable: Any) -> Any:
    return await awaitable
