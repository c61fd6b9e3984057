"""A worker's life around its ticks: start up (the engine lock, registration, the
listener, the watchdog), tick until stopped, ride out a database outage, wait between ticks
(woken by finished tries), and drain on shutdown.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.db import DatabaseError

from .. import notify, store
from ..clock import log_clock_skew
from ..conf import cadence_settings
from ..executors.log_text import log_value
from ..notify.sender import Notifier
from ..schedule.queues import describe as describe_queues
from . import workers
from .tuning import FINISH_WINDOW, PAUSE, QUEUE_HOLD

if TYPE_CHECKING:
    from .loop import Engine

logger = logging.getLogger("django_cadence.engine")


def run(
    engine: Engine,
    stop: threading.Event,
    *,
    once: bool = False,
    shutdown_grace: float | None = None,
    on_start: Callable[[Engine], None] | None = None,
) -> None:
    """``Engine.run``: start up, tick until stopped, drain, and let go of what it took."""
    if not _check_connections(engine, stop):
        return  # stopped while waiting for the database: nothing started
    lock = store.of(engine.using).engine_lock()
    lock.acquire()
    logger.info(
        "engine started worker=%s concurrency=%s max_tick=%s queues=%s",
        engine.worker_id,
        engine.concurrency,
        engine.max_tick,
        describe_queues(engine.queues),
    )
    log_clock_skew(engine.clock, engine.worker_id)
    if on_start is not None:
        on_start(engine)
    engine._lost_workers.start(engine.clock.now())
    if engine.watchdog is not None:
        engine.watchdog.start()
    engine._registered = False
    with contextlib.suppress(DatabaseError):
        workers.register(
            engine.worker_id,
            engine.clock.now(),
            concurrency=engine.concurrency,
            queues=describe_queues(engine.queues) if engine.queues else "",
            session_lock=engine._lost_workers.session_lock is not None,
        )
        engine._registered = True
    listener = None if once else store.of(engine.using).start_listener(engine._notice)
    notifier = _start_notifier(engine, once)
    try:
        loop(engine, stop, once=once)
        drain(
            engine,
            cadence_settings.SHUTDOWN_GRACE.total_seconds()
            if shutdown_grace is None
            else shutdown_grace,
        )
    finally:
        engine.close()
        if notifier is not None:
            notifier.stop()
        if engine._registered:
            with contextlib.suppress(DatabaseError):
                workers.stopped(engine.worker_id, engine.clock.now())
        if listener:
            listener.stop()
        if engine.watchdog is not None:
            engine.watchdog.stop()
        engine._lost_workers.stop()
        lock.release()
        logger.info("engine stopped worker=%s", engine.worker_id)


def _check_connections(engine: Engine, stop: threading.Event) -> bool:
    """Refuse (``UnsupportedConnection``) a way of reaching the database that this engine
    cannot keep its guarantees on (docs/design.md, "Databases"), waiting for a database
    that cannot be reached yet; False if stopped meanwhile. Then this thread's
    connection, the engine's, is its own, never one of a pool's."""
    st = store.of(engine.using)
    backoff = 0.5
    while not stop.is_set():
        try:
            st.check_connections(engine.concurrency)
            st.outside_pool()
            return True
        except DatabaseError as exc:
            logger.error("database unavailable: %s; retrying in %.1f s", log_value(exc), backoff)
            stop.wait(backoff)
            backoff = min(backoff * 2, 10.0)
    return False


def _start_notifier(engine: Engine, once: bool) -> Notifier | None:
    """The thread that resolves cleared episodes and sends notifications (CADENCE_NOTIFY),
    apart from the ticks; none for an inline engine or ``--once``."""
    if engine.inline or once or not notify.enabled():
        return None
    notifier = Notifier(engine.worker_id, engine.clock.now)
    notifier.start()
    return notifier


def loop(engine: Engine, stop: threading.Event, *, once: bool) -> None:
    backoff = 0.5
    down_since: float | None = None  # monotonic: the first failure of an outage
    while not stop.is_set() and engine.unhealthy is None:
        # Cleared before the tick: a try that finishes during it wakes the next wait.
        engine._wake.clear()
        try:
            engine.connection.refresh()
            engine.connection.set_up()
            if once and engine.due_by is None:
                engine.due_by = engine.clock.now()
            delay = engine.tick()
            backoff = 0.5
            if down_since is not None:
                logger.info(
                    "database back after %.1f s worker=%s",
                    time.monotonic() - down_since,
                    engine.worker_id,
                )
                down_since = None
        except DatabaseError as exc:
            if _lost_a_deadlock(engine, exc, ""):
                continue
            down_since = down_since or time.monotonic()
            logger.error("database unavailable: %s; retrying in %.1f s", log_value(exc), backoff)
            engine.connection.close()
            engine._lost_workers.disconnected()
            cap = engine._lost_workers.backoff_cap(has_tries=bool(engine.tries))
            delay, backoff = backoff, min(backoff * 2, cap)
            # A real back-off: wake-ups (a finished try, the listener's reconnects) need
            # the database too, so they do not cut it short; only a stop signal does.
            stop.wait(delay)
            delay = 0
        if once and not (engine.tries or engine.tries.has_unrecorded() or engine.claimed_last_tick):
            return  # everything due at the start has run (retries come later)
        if once:
            delay = min(delay, 0.05)
        if delay > 0:
            _wait(engine, stop, delay)


def _lost_a_deadlock(engine: Engine, exc: DatabaseError, during: str) -> bool:
    """True (and logged) if the server broke a deadlock with another worker's transaction
    by rolling this tick's back: nothing went down, so the tick runs again at once, with
    no backoff, reconnect or distrust of what the probes see."""
    if not store.of(engine.using).lost_to_a_deadlock(exc):
        return False
    logger.warning("deadlock%s, rolled back; ticking again: %s", during, log_value(exc))
    return True


def _wait(engine: Engine, stop: threading.Event, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not stop.is_set() and not engine._wake.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        step = min(remaining, 0.25)
        before = time.monotonic()
        engine._wake.wait(step)
        if time.monotonic() - before > step + PAUSE:
            return  # the process was paused: tick now (``_renew_after_a_pause``)
    if engine._wake.is_set():
        _hold_while_queued(engine, stop)
        _gather_finishes(engine, stop)


def _hold_while_queued(engine: Engine, stop: threading.Event) -> None:
    """Woken while tries wait for threads, let the threads start them before this tick
    takes the interpreter (``QUEUE_HOLD``)."""
    deadline = time.monotonic() + QUEUE_HOLD
    while not stop.is_set() and engine.tries.queued_count() > 0:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        # Not woken by each finish (the wake stays set for the tick): a wake-up per try
        # would take the interpreter from the threads the hold is for.
        stop.wait(min(remaining, 0.01))


def _gather_finishes(engine: Engine, stop: threading.Event) -> None:
    """Woken by a finished try, give the others a moment (``FINISH_WINDOW``) to finish too.

    Short tries started together end together, but the first to end wakes the engine,
    which would then record and refill only its slot and run a round of statements per
    try. Waiting this briefly lets one round record and refill most of them.
    """
    deadline = time.monotonic() + FINISH_WINDOW
    while not stop.is_set():
        running = engine.tries.still_running()
        remaining = deadline - time.monotonic()
        if running <= 0 or remaining <= 0:
            return
        engine._wake.clear()  # the loop clears it before the tick anyway
        engine._wake.wait(remaining)


def _say_what_drain_waits_for(engine: Engine, grace: float) -> None:
    """One line at once, so a stopped engine is never silent while it waits."""
    claims = engine.tries.claims()
    if not claims:
        logger.info("draining: nothing running; exiting")
        return
    ids = ", ".join(str(c.attempt_id) for c in claims)
    tries = "1 running try" if len(claims) == 1 else f"{len(claims)} running tries"
    logger.info(
        "draining: waiting up to %g s (CADENCE_SHUTDOWN_GRACE) for %s to finish "
        "(attempts %s); any still running then are handed back to other workers. "
        "A second Ctrl+C (SIGINT or SIGTERM) exits now and hands nothing back: "
        "their leases expire and another worker takes them over",
        grace,
        tries,
        ids,
    )


def drain(engine: Engine, grace: float) -> None:
    """Stop claiming, let running tries finish within ``grace``, release the rest."""
    engine.claiming = False
    try:
        engine.tries.release_unstarted()  # never started: any worker may take them
    except DatabaseError as exc:
        logger.error("could not release attempts (%s); their leases will expire", log_value(exc))
    _say_what_drain_waits_for(engine, grace)
    deadline = time.monotonic() + grace
    while (engine.tries or engine.tries.has_unrecorded()) and time.monotonic() < deadline:
        engine._wake.clear()
        try:
            engine.tick()
        except DatabaseError as exc:
            if _lost_a_deadlock(engine, exc, " while draining"):
                continue
            logger.error("database unavailable while draining: %s", log_value(exc))
            engine.connection.close()
        engine._wake.wait(0.1)
    if engine.tries:
        try:
            engine.tries.release_all()
        except DatabaseError as exc:
            logger.error(
                "could not release attempts (%s); their leases will expire", log_value(exc)
            )
