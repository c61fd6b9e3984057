"""Bounded waits on every socket of a worker, and sessions that hold no row lock for ever
(``store/bounds.py``; docs/design.md, "A worker cut off from its database")."""

import time

import pytest
from django.db import DatabaseError, connection, connections

from django_cadence import store
from django_cadence.store import bounds

servers_only = pytest.mark.skipif(connection.vendor == "sqlite", reason="a database server")

IDLE, STATEMENT, LOCK = (
    ("idle_in_transaction_session_timeout", "statement_timeout", "lock_timeout")
    if connection.vendor == "postgresql"
    else ("idle_transaction_timeout", "max_statement_time", "innodb_lock_wait_timeout")
)


@pytest.fixture
def session(transactional_db):
    """A connection of its own to the test database, closed after the test."""
    wrapper = connections.create_connection(connection.alias)
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def seconds(wrapper, name: str) -> float:
    """A limit of the session, in seconds (0: none)."""
    with wrapper.cursor() as cursor:
        if wrapper.vendor == "postgresql":
            cursor.execute("SELECT setting FROM pg_settings WHERE name = %s", [name])
            return int(cursor.fetchone()[0]) / 1000
        cursor.execute(f"SELECT @@SESSION.{name}")
        return float(cursor.fetchone()[0])


def set_limit(wrapper, name: str, value: float) -> None:
    with wrapper.cursor() as cursor:
        if wrapper.vendor == "postgresql":
            cursor.execute("SELECT set_config(%s, %s, false)", [name, str(int(value * 1000))])
        else:
            cursor.execute(f"SET SESSION {name} = %s", [value])


@servers_only
def test_a_session_gets_each_limit_it_lacks(session):
    set_limit(session, IDLE, 0)
    store.of().limit_session(session, bounds.SessionLimits(7, statement=5, lock_wait=6))
    assert seconds(session, IDLE) == 7
    assert seconds(session, STATEMENT) == 5
    assert seconds(session, LOCK) == 6


@servers_only
def test_what_the_project_set_is_kept_and_only_a_looser_statement_or_lock_limit_tightened(
    session,
):
    set_limit(session, IDLE, 60)
    set_limit(session, STATEMENT, 3)  # tighter than the engine's: kept
    set_limit(session, LOCK, 30)  # looser: tightened
    store.of().limit_session(session, bounds.SessionLimits(7, statement=5, lock_wait=6))
    assert seconds(session, IDLE) == 60
    assert seconds(session, STATEMENT) == 3
    assert seconds(session, LOCK) == 6


@servers_only
def test_the_server_ends_a_transaction_left_idle_past_the_limit(session):
    set_limit(session, IDLE, 0)
    store.of().limit_session(session, bounds.SessionLimits(1))
    with pytest.raises(DatabaseError), session.cursor() as cursor:  # noqa: PT012
        cursor.execute("BEGIN")
        cursor.execute("SELECT 1")
        time.sleep(2)
        cursor.execute("SELECT 1")
        cursor.fetchall()


@servers_only
def test_shutting_a_socket_down_ends_a_wait_on_it_from_another_thread(session):
    import threading

    socket = store.of().socket_of(session.connection)
    sleep = "SELECT pg_sleep(20)" if connection.vendor == "postgresql" else "SELECT SLEEP(20)"
    failed = []

    raw = session.connection  # the driver's own: Django's wrapper belongs to this thread

    def wait():
        try:
            with raw.cursor() as cursor:
                cursor.execute(sleep)
        except Exception as exc:  # noqa: BLE001 - the driver's own error
            failed.append(exc)

    thread = threading.Thread(target=wait)
    started = time.monotonic()
    thread.start()
    time.sleep(0.3)
    bounds.shut_down(socket)
    thread.join(10)
    assert failed
    assert time.monotonic() - started < 10  # not the statement's 20 s
    with connection.cursor() as cursor:  # the server's side of it, which sleeps on
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = %s", [sleep]
            )
        else:
            cursor.execute("SELECT id FROM information_schema.processlist WHERE info = %s", [sleep])
            for (thread_id,) in cursor.fetchall():
                cursor.execute(f"KILL {int(thread_id)}")
