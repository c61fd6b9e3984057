"""How this process's connections reach the server: through a pooling proxy, or Django's pool.

A pooling proxy (PgBouncer and its kind) in ``transaction`` or ``statement`` mode hands each
of a client's transactions to whichever server session is free, so a session lock, a
``LISTEN`` or a session-level ``SET`` lands on a session other clients share. The protocol
does not say so; :func:`detect` finds it out from two connections of the client's own.

Django's own pool (``OPTIONS["pool"]``, PostgreSQL) lends connections to threads. The
engine's own connections never come from it (:func:`use_no_pool`): they are held for the
worker's life, or must not wait for one. The threads that run tries do draw from it, so
it must hold as many as they may need at once (:func:`connections_needed`).

docs/design.md, "Databases", states what each shape keeps and what it costs.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from ..conf import cadence_settings

# Rounds of statements on two connections, A B B A each (see ``detect``).
ROUNDS = 4


class Pooling(enum.Enum):
    """What a client connection is on the server."""

    NONE = "none"  # one server session, its own, for its whole life (or session pooling)
    TRANSACTION = "transaction"  # each transaction on whichever server session is free
    STATEMENT = "statement"  # each statement so: a transaction cannot span two


def detect(connect: Callable[[], Any]) -> Pooling:
    """Whether connections opened by ``connect`` (DB-API connections in autocommit) are
    server sessions of their own, by asking the server which session serves each statement.

    Two sessions alive at once never share a backend process, and a session keeps its own
    for its life. Through a transaction-pooling proxy, two client connections idle between
    statements are served by the backends the proxy has free: the one a statement just
    released, when it reuses the most recent first (PgBouncer's default), so the other
    connection's next statement gets it; another one, when it rotates them
    (``server_round_robin``), so the same connection's next statement moves. Statements
    in the order A B B A, in a few rounds, meet one of the two whichever way the proxy picks.
    Then a transaction of two statements tells statement pooling, which refuses it or splits
    it, from transaction pooling.
    """
    first, second = connect(), connect()
    try:
        pids: dict[int, set[int]] = {0: set(), 1: set()}
        for _ in range(ROUNDS):
            for which, raw in ((0, first), (1, second), (1, second), (0, first)):
                pids[which].add(_backend_pid(raw))
            if len(pids[0]) > 1 or len(pids[1]) > 1 or pids[0] & pids[1]:
                break
        else:
            return Pooling.NONE
    finally:
        _close(first)
        _close(second)
    return Pooling.TRANSACTION if _keeps_transactions(connect) else Pooling.STATEMENT


def _backend_pid(raw: Any) -> int:
    with contextlib.closing(raw.cursor()) as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


# protocol_violation: how PgBouncer in statement mode refuses a transaction block.
REFUSED_TRANSACTION = "08P01"


def _keeps_transactions(connect: Callable[[], Any]) -> bool:
    """Whether one transaction's statements all run on one server session."""
    raw = connect()
    try:
        raw.autocommit = False
        pids = {_backend_pid(raw), _backend_pid(raw)}
        raw.commit()
        return len(pids) == 1
    except Exception as exc:
        code = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
        if code == REFUSED_TRANSACTION:
            return False
        raise
    finally:
        _close(raw)


def _close(raw: Any) -> None:
    with contextlib.suppress(Exception):
        raw.close()


_FOUND: dict[tuple[Any, ...], Pooling] = {}


def found(connection: BaseDatabaseWrapper, connect: Callable[[], Any]) -> Pooling:
    """:func:`detect` for ``connection``'s database, once per process and server."""
    settings = connection.settings_dict
    key = tuple(settings.get(name) for name in ("HOST", "PORT", "NAME", "USER"))
    key = (connection.alias, *key)
    if key not in _FOUND:
        _FOUND[key] = detect(connect)
    return _FOUND[key]


def refusal(pooling: Pooling, where: str) -> str | None:
    """Why an engine cannot run through ``pooling`` at ``where``, naming what to change;
    None when it can."""
    if pooling is Pooling.STATEMENT:
        return (
            f"run_cadence cannot run through a statement-pooling proxy: {where} runs each "
            "statement on whichever server session is free (PgBouncer's pool_mode = "
            "statement), and the engine's claims are transactions of several statements. "
            "Point run_cadence at a proxy in pool_mode = session (or transaction, with "
            "CADENCE_SESSION_LIVENESS = False), or straight at the server."
        )
    if pooling is Pooling.TRANSACTION and cadence_settings.SESSION_LIVENESS:
        return (
            f"run_cadence cannot prove its workers alive through a transaction-pooling "
            f"proxy: {where} runs each transaction on whichever server session is free "
            "(PgBouncer's pool_mode = transaction), so a worker's session lock would stay "
            "on a shared session after the worker died. Set CADENCE_SESSION_LIVENESS = False "
            "(a lost worker's tries are then recovered when their lease ends: CADENCE_LEASE "
            "plus CADENCE_RECOVERY_GRACE), or point run_cadence at a proxy in pool_mode = "
            "session, or straight at the server."
        )
    return None


# --- Django's connection pool ------------------------------------------------------------------


def pool_refusal(connection: BaseDatabaseWrapper, concurrency: int) -> str | None:
    """Why Django's pool of ``connection``'s alias is too small for a worker of
    ``concurrency`` try threads, with the size it needs; None when it is large enough."""
    size = pool_max_size(connection)
    if size is None:
        return None
    parts = connections_needed(concurrency)
    needed = sum(count for count, _ in parts)
    if size >= needed:
        return None
    alias = connection.alias
    default = ""
    if _pool_options(connection)["pool"] is True:
        default = " (pool = True: psycopg_pool's default)"
    return (
        f"run_cadence with --concurrency {concurrency} may hold {needed} connections of the "
        f"pool of the database {alias!r} at once ("
        + ", ".join(f"{count} {why}" for count, why in parts)
        + f"), and the pool lends at most {size}{default}. Set max_size to {needed} or more "
        f"in DATABASES[{alias!r}]['OPTIONS']['pool'] (e.g. 'pool': {{'max_size': {needed}}}), "
        "or lower --concurrency (CADENCE_CONCURRENCY)."
    )


def pool_max_size(connection: BaseDatabaseWrapper) -> int | None:
    """How many connections Django's pool of ``connection``'s alias lends at most; None
    without a pool (read from the pool object, which is made without connecting)."""
    if not _pool_options(connection).get("pool"):
        return None
    pool = getattr(connection, "pool", None)
    return None if pool is None else int(pool.max_size)


def connections_needed(concurrency: int) -> list[tuple[int, str]]:
    """The pool's connections a worker of ``concurrency`` try threads may hold at once, by
    what holds them: each try thread keeps its connection while it lives, a thread whose try
    timed out and never returned keeps its own until the worker is replaced, and the
    metrics server reads on a thread of its own. The engine's own sessions are not among
    them (:func:`use_no_pool`)."""
    parts = [(concurrency, "for the threads that run tries (--concurrency)")]
    stuck = cadence_settings.STUCK_THREADS_LIMIT
    if stuck:
        why = (
            "for threads whose try timed out and never returned, kept until the worker is "
            "replaced (CADENCE_STUCK_THREADS_LIMIT)"
        )
        parts.append((stuck, why))
    if cadence_settings.METRICS and cadence_settings.METRICS_PORT is not None:
        parts.append((1, "for the metrics server (CADENCE_METRICS_PORT)"))
    return parts


def use_no_pool(connection: BaseDatabaseWrapper) -> None:
    """Open this thread's ``connection`` directly from now on, not from Django's pool.

    Django keeps one connection object per thread and alias, and reads the pool from its
    ``settings_dict``: this thread's object gets a copy without it. A connection it already
    drew goes back to the pool first.
    """
    options = _pool_options(connection)
    if not options.get("pool"):
        return
    if connection.connection is not None:
        connection.close()
    connection.settings_dict = {
        **connection.settings_dict,
        "OPTIONS": {key: value for key, value in options.items() if key != "pool"},
    }


def _pool_options(connection: BaseDatabaseWrapper) -> dict[str, Any]:
    return dict(connection.settings_dict.get("OPTIONS") or {})
