"""Sample jobs: one that succeeds, one that fails now and then, one that runs long."""

import logging
import random
import time

from django_cadence.executors.registry import job

logger = logging.getLogger(__name__)


@job
def say_hello(name: str = "world") -> str:
    """Succeeds every time."""
    message = f"hello, {name}"
    logger.info("say_hello %s", message)
    return message


@job(max_attempts=3, retry_base=2)
def flaky(failure_rate: float = 0.3) -> str:
    """Fails now and then; its retries show the backoff ladder and, rarely, a dead letter."""
    if random.random() < failure_rate:  # noqa: S311 - not security relevant
        raise RuntimeError(f"flaky job failed (failure_rate={failure_rate})")
    return "ok"


@job(max_runtime=120)
def long_running(seconds: float = 30, context=None) -> dict:
    """Runs for a while and stops early when asked to (timeout, replace, shutdown)."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if context is not None and context.cancel_event.is_set():
            return {"stopped_early_after": round(time.monotonic() - started, 1)}
        time.sleep(0.5)
    return {"ran_for": seconds}
