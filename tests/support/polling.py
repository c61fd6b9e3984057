"""Waiting on this process's own threads (an engine's tries), which answer within milliseconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from benchmarks.fleet import wait_until

T = TypeVar("T")


def poll_until(condition: Callable[[], T], timeout: float = 5.0) -> T:
    """``condition()`` once it is truthy, polled every 5 ms; an AssertionError after
    ``timeout`` seconds."""
    return wait_until(condition, timeout=timeout, interval=0.005, message="the engine's threads")
