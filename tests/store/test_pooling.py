"""How this process's connections reach PostgreSQL: a pooling proxy found out from the
client (a real PgBouncer in each of its modes), and Django's own pool kept away from the
engine's own sessions (docs/design.md, "Databases")."""

from __future__ import annotations

import copy
import threading

import psycopg
import pytest
from django.db import connection, connections

from benchmarks.fleet import wait_until
from django_cadence import store
from django_cadence.engine import liveness
from django_cadence.exceptions import UnsupportedConnection
from django_cadence.store import pooling
from django_cadence.store.pooling import Pooling

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="PgBouncer and Django's pool: PostgreSQL"
    ),
    pytest.mark.django_db,
]


@pytest.fixture
def alias():
    """Add a database alias like the test's, through another port or with more OPTIONS:
    ``alias("name", port=..., options={"pool": ...})``; gone at teardown, pool and all."""
    added: list[str] = []

    def add(name: str, *, port: int | None = None, options: dict | None = None) -> str:
        settings_dict = copy.deepcopy(connection.settings_dict)
        if port is not None:
            settings_dict["PORT"] = str(port)
        settings_dict["OPTIONS"] = {**settings_dict["OPTIONS"], **(options or {})}
        connections.settings[name] = settings_dict
        added.append(name)
        return name

    yield add
    for name in added:
        wrapper = connections[name]
        wrapper.close()
        if wrapper.settings_dict["OPTIONS"].get("pool") or name in wrapper._connection_pools:
            wrapper.close_pool()
        del connections[name]
        del connections.settings[name]


def connector(port: int):
    settings = connection.settings_dict

    def connect():
        return psycopg.connect(
            host=settings["HOST"] or "127.0.0.1",
            port=port,
            user=settings["USER"] or "postgres",
            dbname=settings["NAME"],
            autocommit=True,
            prepare_threshold=None,  # as Django connects: no server-side prepared statements
        )

    return connect


def test_pooling_a_direct_connection_is_a_session_of_its_own():
    assert pooling.detect(connector(int(connection.settings_dict["PORT"]))) is Pooling.NONE
    st = store.of()
    assert (st.transaction_pooled(), st.session_state_is_private) == (False, True)


def test_pooling_pgbouncer_in_session_mode_keeps_each_client_its_session(pgbouncer, alias):
    bouncer = pgbouncer("session")
    assert pooling.detect(connector(bouncer.port)) is Pooling.NONE
    st = store.of(alias("through_session", port=bouncer.port))
    assert (st.transaction_pooled(), st.session_state_is_private) == (False, True)
    st.check_connections(8)  # nothing to refuse


def test_pooling_pgbouncer_in_transaction_mode_is_found_and_wants_no_session_state(
    pgbouncer, alias
):
    bouncer = pgbouncer("transaction")
    assert pooling.detect(connector(bouncer.port)) is Pooling.TRANSACTION
    st = store.of(alias("through_transaction", port=bouncer.port))
    assert (st.transaction_pooled(), st.session_state_is_private) == (True, False)
    assert st.start_listener(lambda: None) is None  # LISTEN would land on a shared session


def test_pooling_transaction_mode_is_found_when_the_proxy_rotates_its_sessions(pgbouncer):
    """``server_round_robin``: the proxy hands out its idle sessions in turn, not the
    latest first. With two idle, statements alternating A B A B would each meet the same
    one every time (A the first, B the second), as if each client had its own."""
    bouncer = pgbouncer("transaction", extra={"server_round_robin": "1"})
    connect = connector(bouncer.port)
    warm = [connect() for _ in range(2)]
    for raw in warm:  # two sessions at once: the proxy opens two, then idles them
        raw.execute("BEGIN")
        raw.execute("SELECT 1")
    for raw in warm:
        raw.execute("COMMIT")
        raw.close()
    assert pooling.detect(connect) is Pooling.TRANSACTION


def test_pooling_pgbouncer_in_statement_mode_is_found(pgbouncer):
    bouncer = pgbouncer("statement")
    assert pooling.detect(connector(bouncer.port)) is Pooling.STATEMENT


def test_pooling_the_refusals_name_the_setting_to_change(pgbouncer, alias, settings):
    through = store.of(alias("through_pooler", port=pgbouncer("transaction").port))
    with pytest.raises(UnsupportedConnection, match="Set CADENCE_SESSION_LIVENESS = False"):
        through.check_connections(8)
    settings.CADENCE_SESSION_LIVENESS = False
    through.check_connections(8)  # leases alone: it may run

    statement = store.of(alias("through_statement", port=pgbouncer("statement").port))
    with pytest.raises(UnsupportedConnection, match="pool_mode = session"):
        statement.check_connections(8)


def test_pooling_a_pool_smaller_than_a_worker_needs_is_refused_with_the_size_it_needs(
    alias, settings
):
    pooled = store.of(alias("pooled_default", options={"pool": True}))  # psycopg_pool: 4
    with pytest.raises(UnsupportedConnection) as refused:
        pooled.check_connections(8)
    message = str(refused.value)
    assert "may hold 12 connections" in message  # 8 try threads, 4 stuck ones at most
    assert "lends at most 4 (pool = True: psycopg_pool's default)" in message
    assert "Set max_size to 12 or more in DATABASES['pooled_default']['OPTIONS']['pool']" in (
        message
    )
    # An exact fit is enough; the metrics server counts one more.
    exact = store.of(alias("pooled_exact", options={"pool": {"max_size": 6}}))
    exact.check_connections(2)
    settings.CADENCE_METRICS = True
    settings.CADENCE_METRICS_PORT = 9464
    with pytest.raises(UnsupportedConnection, match="1 for the metrics server"):
        exact.check_connections(2)


def test_pooling_connections_needed_counts_try_threads_and_the_stuck_ones(settings):
    assert sum(n for n, _ in pooling.connections_needed(8)) == 12
    settings.CADENCE_STUCK_THREADS_LIMIT = 0  # never replaced: nothing counted for them
    assert sum(n for n, _ in pooling.connections_needed(8)) == 8


def test_pooling_a_session_lock_never_rides_a_connection_of_djangos_pool(alias):
    """Taken and released again and again (a cut session taken back), the lock's session
    is the worker's own: the pool lends nothing to it, and so never gets a connection back
    with the lock on it, nor loses one."""
    name = alias("pooled_lock", options={"pool": {"min_size": 1, "max_size": 1, "timeout": 2}})
    lock = liveness.SessionLock("w-pooled", name)
    for _ in range(3):
        assert lock.acquire()
        assert liveness.still_held("w-pooled")
        lock.release()
        # The server frees it as the session's process exits, a moment after the close.
        wait_until(lambda: not liveness.still_held("w-pooled"), timeout=5, message="the lock")
    assert connections[name].pool.get_stats().get("requests_num", 0) == 0


def test_pooling_outside_pool_opens_this_threads_connection_directly(alias):
    name = alias("pooled_engine", options={"pool": {"min_size": 1, "max_size": 1, "timeout": 2}})
    result: dict[str, object] = {}

    def engine_thread() -> None:
        try:
            # connect(), as ensure_connection() does: the test case lets only its own
            # aliases ensure one.
            wrapper = connections[name]
            wrapper.connect()  # drawn from the pool, as Django does
            store.of(name).outside_pool()  # given back; from now on its own
            wrapper.connect()
            with wrapper.cursor() as cursor:
                cursor.execute("SELECT 1")
            result["pooled"] = wrapper.pool is not None
            wrapper.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            result["error"] = exc

    thread = threading.Thread(target=engine_thread)
    thread.start()
    thread.join(20)
    assert "error" not in result, result.get("error")
    assert result["pooled"] is False
    pool = connections[name].pool
    assert pool.get_stats().get("requests_num", 0) == 1  # the first draw only
    pool.putconn(pool.getconn(timeout=2))  # and it came back: the pool's one connection
