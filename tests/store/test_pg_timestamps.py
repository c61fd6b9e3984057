"""The engine's connection reads timestamptz with psycopg's loader: same values as Django's.

Every test runs on every database: on PostgreSQL the loader is installed and must change no
value; elsewhere it is left out, and the engine reads what it always read.
"""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection

from django_cadence.engine.loop import Engine
from django_cadence.models import Schedule
from django_cadence.store import postgresql as pg_timestamps

pytestmark = pytest.mark.django_db

ON_POSTGRESQL = connection.vendor == "postgresql"

# A DST edge, a whole hour in another offset, a half-hour offset with a fraction of a second.
SAMPLES = (
    datetime(2026, 3, 29, 0, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 10, 25, 1, 30, tzinfo=timezone(timedelta(hours=2))),
    datetime(1999, 12, 31, 23, 59, 59, 500000, tzinfo=timezone(-timedelta(hours=5, minutes=30))),
)


@pytest.fixture(autouse=True)
def djangos_loader():
    """Each test starts and ends with Django's loader on the shared test connection."""

    def restore():
        if ON_POSTGRESQL and connection.connection is not None:
            from django.db.backends.postgresql.psycopg_any import register_tzloader

            register_tzloader(connection.timezone, connection.connection)

    restore()
    yield
    restore()


def _native_installed() -> bool:
    if not ON_POSTGRESQL:
        return False
    from psycopg.pq import Format

    loader = connection.connection.adapters.get_loader(1184, Format.TEXT)
    return loader.__name__ == "NativeUTCLoader"


def _read_run_ats() -> list[datetime]:
    return list(Schedule.objects.order_by("name").values_list("run_at", flat=True))


def test_the_native_loader_reads_what_djangos_loader_reads(make_schedule):
    for i, at in enumerate(SAMPLES):
        make_schedule(name=f"s{i}", kind="once", run_at=at, interval=None)
    connection.ensure_connection()
    before = _read_run_ats()
    assert pg_timestamps.use_native_loader(connection) is ON_POSTGRESQL
    after = _read_run_ats()
    assert after == before == list(SAMPLES)
    assert [value.tzinfo for value in after] == [UTC] * len(SAMPLES)
    assert Schedule.objects.filter(run_at=SAMPLES[0]).exists()


def test_a_session_in_another_time_zone_keeps_djangos_loader():
    connection.ensure_connection()
    if ON_POSTGRESQL:
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'Europe/Paris'")
    try:
        assert not pg_timestamps.use_native_loader(connection)
        assert not _native_installed()
    finally:
        if ON_POSTGRESQL:
            with connection.cursor() as cursor:
                cursor.execute("SET TIME ZONE 'UTC'")


@pytest.mark.django_db(transaction=True)  # a connection can be closed outside a transaction only
def test_other_databases_and_closed_connections_are_left_as_they_are():
    if not ON_POSTGRESQL:
        connection.ensure_connection()
        assert not pg_timestamps.use_native_loader(connection)
    connection.close()
    assert not pg_timestamps.use_native_loader(connection)


@pytest.mark.django_db(transaction=True)
def test_the_engine_sets_up_each_new_session_once(clock):
    engine = Engine(clock=clock, inline=True)
    engine.connection.set_up()
    assert _native_installed() is ON_POSTGRESQL
    first = connection.connection
    connection.close()
    engine.connection.set_up()
    assert connection.connection is not first
    assert _native_installed() is ON_POSTGRESQL
