"""The engine's own connection (docs/design.md, "A worker cut off from its database"): every
round trip it waits on is timed, so the watchdog can cut one that a silent network holds,
whether it goes through a cursor or is a transaction's start, commit or rollback, which the
drivers send outside any cursor (mysqlclient's ``autocommit()``, psycopg's ``commit()``).
"""

import logging
import socket

import pytest
from django.db import connection, transaction

from django_cadence import store
from django_cadence.engine.connection import EngineConnection
from django_cadence.store import bounds

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def engine_connection():
    engine = EngineConnection(connection.alias)
    yield engine
    connection.execute_wrappers[:] = [w for w in connection.execute_wrappers if w != engine._track]
    for name in ("_set_autocommit", "_commit", "_rollback"):
        connection.__dict__.pop(name, None)


def seen_in_flight(engine, name):
    """Replace the connection's ``name`` by one that records whether the engine saw the call
    in flight, before the engine wraps it."""
    seen = []
    original = getattr(connection, name)

    def record(*args, **kwargs):
        seen.append(engine.call is not None)
        return original(*args, **kwargs)

    setattr(connection, name, record)
    return seen


@pytest.mark.parametrize("name", ["_set_autocommit", "_commit", "_rollback"])
def test_a_transaction_call_is_timed_as_a_round_trip(engine_connection, name):
    connection.ensure_connection()  # connecting is bounded by its own timeout
    seen = seen_in_flight(engine_connection, name)
    engine_connection.set_up()
    try:
        with transaction.atomic(using=connection.alias):
            connection.cursor().execute("SELECT 1")
            if name == "_rollback":
                transaction.set_rollback(True, using=connection.alias)
    finally:
        connection.set_autocommit(True)
    assert seen
    assert all(seen), seen
    assert engine_connection.call is None  # nothing in flight once the call returned


def test_a_statement_is_timed_and_set_up_twice_wraps_once(engine_connection):
    engine_connection.set_up()
    engine_connection.set_up()
    assert connection.execute_wrappers.count(engine_connection._track) == 1
    commit = connection._commit
    assert commit._cadence_timed
    assert not getattr(commit.__wrapped__, "_cadence_timed", False)


def test_a_round_trip_past_its_limit_has_its_socket_shut(engine_connection, caplog):
    near, far = socket.socketpair()
    try:
        limit = (bounds.engine_limits().statement or 0.0) + bounds.CLIENT_SLACK
        engine_connection.call = (100.0, near.fileno())
        assert engine_connection.cut_if_stuck(100.0 + limit - 0.5) == 100.0 + limit
        with pytest.raises(BlockingIOError):  # not yet: still open, nothing to read
            far.recv(1, socket.MSG_DONTWAIT)
        with caplog.at_level(logging.WARNING, logger="django_cadence.engine"):
            assert engine_connection.cut_if_stuck(100.0 + limit) is None
        assert "database silent" in caplog.text
        assert far.recv(1) == b""  # the waiting side sees its connection end
        assert engine_connection.call is None
    finally:
        near.close()
        far.close()


def test_a_connection_already_lost_has_no_socket_to_cut(engine_connection):
    """The driver raises when asked for a lost connection's socket: the round trip still
    goes on (and fails as the driver says), with nothing for the watchdog to cut."""
    engine_connection.set_up()
    raw = connection.connection
    raw.close()
    assert store.of(connection.alias).socket_of(raw) is None
    with engine_connection._in_flight():
        assert engine_connection.call is not None
        assert engine_connection.call[1] is None
    connection.connection = None  # Django opens a fresh one for the next test
