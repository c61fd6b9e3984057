"""The call convention: what a job receives (its payload as keyword arguments, and an
``AttemptContext`` if it declares ``context``), checked against its signature before a
schedule is saved, and how sync and async jobs are called.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from ..exceptions import InvalidPayload

CONTEXT = "context"  # the parameter a job declares to receive its AttemptContext


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
    # The engine's durable, fenced write of the uncertain mark; None outside the engine.
    mark: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

    @property
    def cancelled(self) -> bool:
        """True once the try must stop: it timed out, was cancelled or replaced, or its
        worker lost its claim on it. A job in a thread cannot be killed: a long one polls
        this (or waits on ``cancel_event``) and returns early."""
        return self.cancel_event.is_set()

    def mark_uncertain(self, reason: str = "") -> None:
        """Say that the next step must not repeat (charging a card), before taking it.

        Committed before this returns: if the worker is then lost, the attempt is
        dead-lettered as uncertain with ``reason`` instead of run again. Raises
        ``ClaimLost`` if this try no longer holds its attempt: do not take the step.
        Outside the engine (a context built by a test) there is nothing to mark.
        """
        if self.mark is not None:
            self.mark(reason)


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


def clear_cache() -> None:
    """Forget the signatures read so far (tests redefine jobs under the same path)."""
    _call_info.cache_clear()
