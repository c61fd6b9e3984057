"""The engine's connection reads timestamptz with psycopg's loader: same values as Django's."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from django_cadence import pg_timestamps
from django_cadence.engine import Engine
from django_cadence.models import Schedule

pytestmark = pytest.mark.django_db

SAMPLES = (
    "2026-03-29 00:59:59.999999+00",
    "2026-10-25 01:30:00+02",
    "1999-12-31 23:59:59.5-05:30",
)


@pytest.fixture(autouse=True)
def djangos_loader():
    """Each test starts and ends with Django's loader on the shared test connection."""

    def restore():
        if connection.vendor == "postgresql" and connection.connection is not None:
            from django.db.backends.postgresql.psycopg_any import register_tzloader

            register_tzloader(connection.timezone, connection.connection)

    restore()
    yield
    restore()


def _read_samples() -> list:
    with connection.cursor() as cursor:
        values = ", ".join(f"TIMESTAMPTZ '{sample}'" for sample in SAMPLES)
        cursor.execute(f"SELECT {values}")
        return list(cursor.fetchone())


def _loader_name() -> str:
    from psycopg.pq import Format

    loader = connection.connection.adapters.get_loader(1184, Format.TEXT)
    return loader.__name__


needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="Django's own timestamptz loader is PostgreSQL's"
)


@needs_postgresql
def test_the_native_loader_reads_what_djangos_loader_reads():
    connection.ensure_connection()
    before = _read_samples()
    assert pg_timestamps.use_native_loader(connection)
    after = _read_samples()
    assert after == before
    assert [value.tzinfo for value in after] == [UTC] * len(after)
    assert [value.utcoffset() for value in after] == [timedelta(0)] * len(after)


@needs_postgresql
def test_rows_read_through_the_orm_are_the_same(make_schedule):
    at = datetime(2026, 3, 29, 0, 59, 59, 999999, tzinfo=UTC)
    make_schedule(kind="once", run_at=at, interval=None)
    connection.ensure_connection()
    assert pg_timestamps.use_native_loader(connection)
    schedule = Schedule.objects.get()
    assert schedule.run_at == at
    assert schedule.run_at.tzinfo is UTC
    assert Schedule.objects.filter(run_at=at).exists()


@needs_postgresql
def test_a_session_in_another_time_zone_keeps_djangos_loader():
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Europe/Paris'")
    try:
        assert not pg_timestamps.use_native_loader(connection)
        assert _loader_name() != "NativeUTCLoader"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")


@pytest.mark.django_db(transaction=True)  # a connection can be closed outside a transaction only
def test_other_databases_and_closed_connections_are_left_as_they_are():
    if connection.vendor != "postgresql":
        connection.ensure_connection()
        assert not pg_timestamps.use_native_loader(connection)
    connection.close()
    assert not pg_timestamps.use_native_loader(connection)


@needs_postgresql
@pytest.mark.django_db(transaction=True)
def test_the_engine_sets_up_each_new_session_once(clock):
    engine = Engine(clock=clock, inline=True)
    engine._set_up_session()
    assert _loader_name() == "NativeUTCLoader"
    first = connection.connection
    connection.close()
    engine._set_up_session()
    assert connection.connection is not first
    assert _loader_name() == "NativeUTCLoader"
