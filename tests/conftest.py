"""Fixtures shared by the suite: a schedule factory, fake clocks and engines, the admin's
superuser, the webhook receiver, and PgBouncers in front of the PostgreSQL server."""

from __future__ import annotations

import contextlib
import itertools
from datetime import timedelta

import pytest
from hypothesis import settings as hypothesis_settings

# A property is about values: no example fails for taking long on a loaded machine (the
# default deadline is 200 ms). Speed is measured in benchmarks/.
hypothesis_settings.register_profile("cadence", deadline=None)
hypothesis_settings.load_profile("cadence")

# The tests marked ``servers`` (row locks, session locks, deadlocks) and the nodes of those
# that were skipped for it on SQLite, for the summary line.
SERVERS_ONLY = pytest.StashKey[set[str]]()


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``servers`` when the database is SQLite, saying why."""
    from django.db import connection

    skipped = config.stash.setdefault(SERVERS_ONLY, set())
    if connection.vendor != "sqlite":
        return
    for item in items:
        marker = item.get_closest_marker("servers")
        if marker is not None:
            what = marker.args[0] if marker.args else "PostgreSQL and MariaDB"
            item.add_marker(pytest.mark.skip(reason=f"needs PostgreSQL or MariaDB: {what}"))
            skipped.add(item.nodeid)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, config):
    """A run on SQLite says how many tests it skipped for want of a server, and how to run
    them, rather than leave a green run that never ran them: last, under the skips listed."""
    yield
    nodes = config.stash.get(SERVERS_ONLY, set())
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if r.nodeid in nodes]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} test(s) skipped because the database is SQLite: they need "
            "PostgreSQL or MariaDB. Run them with CADENCE_TEST_DB=postgresql (or mysql) "
            "pytest, or make test-postgresql test-mysql.",
            yellow=True,
            bold=True,
        )


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
def hook():
    """An HTTP server on 127.0.0.1 that verifies every webhook's signature
    (``tests/support/receivers.py``); what it received, as a ``Hook``."""
    from tests.support.receivers import serve_hook

    received, server = serve_hook()
    yield received
    server.shutdown()
    server.server_close()


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
