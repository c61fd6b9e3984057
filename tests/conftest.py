"""Fixtures shared by the suite: a schedule factory, fake clocks and engines, the admin's
superuser, and PgBouncers in front of the PostgreSQL server."""

from __future__ import annotations

import contextlib
import itertools
from datetime import timedelta

import pytest


@pytest.fixture
def make_schedule(db):
    """Create a valid schedule, overriding any field: ``make_schedule(kind="cron", cron=...)``."""
    from django_cadence.models import Schedule

    counter = iter(range(1, 1_000_000))

    def factory(**fields):
        defaults = {
            "name": f"schedule-{next(counter)}",
            "kind": "interval",
            "interval": timedelta(minutes=5),
            "executor": "tests.jobs.noop",
            "payload": {},
        }
        defaults.update(fields)
        return Schedule.objects.create(**defaults)

    return factory


@pytest.fixture
def admin_user(django_user_model, db):
    """The superuser behind ``admin_client``, without a password: hashing one costs ~1 s."""
    return django_user_model.objects.create_superuser("admin", "admin@example.com", None)


@pytest.fixture
def clock():
    """A fake clock at a fixed, DST-free instant; tests move it explicitly."""
    from datetime import UTC, datetime

    from django_cadence.testing import FakeClock

    return FakeClock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def engine(db, clock):
    """An engine on the fake clock that runs tries inline, so a tick is deterministic."""
    from django_cadence.engine.loop import Engine

    return Engine(clock=clock, worker_id="worker-1", inline=True, concurrency=8)


@pytest.fixture
def schedule_at(make_schedule, clock):
    """Create a schedule as if created at the fake clock's now."""

    def factory(**fields):
        fields.setdefault("created_at", clock.now())
        return make_schedule(**fields)

    return factory


@pytest.fixture
def threaded_engine(db, clock):
    """Build engines that run tries in threads; their threads are stopped at teardown."""
    from django_cadence.engine.loop import Engine

    engines = []

    def factory(**options):
        options.setdefault("clock", clock)
        options.setdefault("worker_id", "worker-t")
        engine = Engine(**options)
        engines.append(engine)
        return engine

    yield factory
    for engine in engines:
        engine.close()


@pytest.fixture
def pgbouncer(tmp_path):
    """Start real PgBouncers in front of this test's PostgreSQL server, stopped at teardown:
    ``pgbouncer("transaction")`` (or ``"session"``, ``"statement"``; ``extra``: more ini
    settings; ``port``: a chosen one). ``.env()`` points a ``run_cadence`` child at it."""
    from django.db import connection

    from tests.support import pgbouncer as bouncers

    numbers = itertools.count(1)
    with contextlib.ExitStack() as stack:

        def start(
            pool_mode: str, extra: dict[str, str] | None = None, port: int | None = None
        ) -> bouncers.PgBouncer:
            directory = tmp_path / f"pgbouncer-{pool_mode}-{next(numbers)}"
            return stack.enter_context(
                bouncers.running(
                    directory,
                    pool_mode,
                    server_host=str(connection.settings_dict["HOST"] or "127.0.0.1"),
                    server_port=str(connection.settings_dict["PORT"] or "5432"),
                    user=str(connection.settings_dict["USER"] or "postgres"),
                    extra=extra,
                    port=port,
                )
            )

        yield start
