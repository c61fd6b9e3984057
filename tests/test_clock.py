"""A worker whose local clock is off by five minutes neither fires early nor twice.

On PostgreSQL and MariaDB the engine's *now* is the database server's (``DatabaseClock``),
so a host's clock does not enter any decision. The proof: the local clock each engine could
read (``datetime.now`` in ``django_cadence.clock``, the engine's only reading of it)
is skewed, per engine thread, by +5 min for one engine and -5 min for the other; the two engines run
the same schedules side by side, and every occurrence still has exactly one record, none is
planned before it is due, and no job starts before its occurrence, by the job's own reading
of the clock (``tests.jobs.noop`` records each execution). Were the local clock used,
the engine 5 minutes ahead would plan some 300 occurrences of each 1-second schedule early.

On SQLite there is one engine per database file, on the database's host: its local clock is
the engine clock (the single-host assumption, stated in docs/design.md "Time"). The test pins
that and that one engine, however its clock reads, records each occurrence once.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections

import django_cadence.clock
import django_cadence.engine.budget
from benchmarks.chaos_app.jobs import EXECUTIONS_ENV
from benchmarks.chaos_checks import executions, read_execution_lines, started_early
from django_cadence.clock import DatabaseClock, SystemClock, default_clock
from django_cadence.engine.loop import Engine
from django_cadence.models import Attempt, Schedule, Status
from tests.support.records import check_occurrences

pytestmark = pytest.mark.django_db(transaction=True)

SKEW = timedelta(minutes=5)
RUN_SECONDS = 5.0
_local = threading.local()


class SkewedDatetime(datetime):
    """``datetime`` whose ``now()`` is off by the calling thread's ``_local.skew``."""

    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + getattr(_local, "skew", timedelta(0))


@pytest.fixture
def skewed_local_clock(monkeypatch):
    """Every local-clock reading of the engine's modules goes through ``SkewedDatetime``."""
    monkeypatch.setattr(django_cadence.clock, "datetime", SkewedDatetime)


@pytest.fixture
def one_try_ahead_each(monkeypatch):
    """Each engine, with its one thread (``run_engines``), holds one try claimed ahead of its
    instant, so two engines share each second's tries (more threads would raise the budget
    to one round of them once the tries' run time is known, ``TryBudget.ahead_budget``).
    The engines wake for the same instants, from the same server clock: with the full
    budget, the one whose wake comes a millisecond sooner claims every try, second after
    second, and the other's clock would never be put to the test."""
    monkeypatch.setattr(django_cadence.engine.budget, "AHEAD_TRIES", 1)
    monkeypatch.setattr(django_cadence.engine.budget, "AHEAD_ROUNDS", 1)


def database_now() -> datetime:
    return DatabaseClock().now()


def create_schedules(start: datetime) -> list[Schedule]:
    common = {"kind": "interval", "interval": timedelta(seconds=1), "executor": "tests.jobs.noop"}
    schedules = [
        Schedule.objects.create(name=f"skew-{overlap}", overlap=overlap, **common)
        for overlap in ("allow", "skip_if_running", "queue")
    ]
    schedules.append(
        Schedule.objects.create(
            name="skew-once",
            kind="once",
            run_at=start + timedelta(seconds=2),
            executor="tests.jobs.noop",
        )
    )
    return schedules


def run_engines(skews: dict[str, timedelta], seconds: float) -> list[Engine]:
    """One engine per entry, each in a thread whose local clock is off by its skew."""
    stop = threading.Event()
    # One thread each: with ``one_try_ahead_each``, no engine can claim a whole second's tries.
    engines = [Engine(worker_id=name, max_tick=0.2, concurrency=1) for name in skews]
    errors: list[BaseException] = []

    def run(engine: Engine) -> None:
        _local.skew = skews[engine.worker_id]
        try:
            engine.run(stop, shutdown_grace=5)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)
    return engines


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """The jobs of the engines in this process record each execution here."""
    monkeypatch.setenv(EXECUTIONS_ENV, str(tmp_path))
    return tmp_path


def assert_each_occurrence_once_and_never_early(
    schedules: list[Schedule], until: datetime, recorded
):
    for schedule in schedules:
        schedule.refresh_from_db()
        if schedule.kind == "once":
            (attempt,) = Attempt.objects.filter(schedule=schedule)
            assert attempt.occurrence_at == schedule.run_at
        else:
            figures = check_occurrences(schedule)  # one record each, none beyond last_run_at
            assert figures["occurrences"] >= 2, (schedule.name, figures)
            assert schedule.last_run_at <= until, (schedule.name, schedule.last_run_at, until)
    attempts = list(Attempt.objects.all())
    assert all(a.occurrence_at <= until for a in attempts), "an occurrence was planned early"
    ran = [a for a in attempts if a.status == Status.SUCCEEDED]
    assert ran
    # The rows' starts are engine-clock readings: none ahead of the server's clock at the end
    # (a row's start is never before its instant by construction: the jobs' records say that).
    assert all(a.started_at <= until for a in ran)
    runs = executions(read_execution_lines(recorded), {})
    assert len(runs) == len(ran)
    early = started_early(runs)
    assert early["count"] == 0, early["examples"]
    assert not [a for a in attempts if a.status == Status.RUNNING]
    # A drained engine hands back the tries it claimed ahead of their instant, unrun.
    assert all(a.tries == 0 for a in attempts if a.status == Status.PENDING)


def test_the_engine_clock_is_the_database_server_except_on_sqlite():
    expected = SystemClock if connection.vendor == "sqlite" else DatabaseClock
    assert isinstance(default_clock(), expected)
    assert isinstance(Engine().clock, expected)


def test_a_local_clock_five_minutes_off_neither_fires_early_nor_twice(
    skewed_local_clock, one_try_ahead_each, recorded, caplog
):
    if connection.vendor == "sqlite":
        # One engine per database file, on the database's host: the local clock is the
        # engine clock, and there is no second engine to disagree with it.
        schedules = create_schedules(datetime.now(UTC))
        (engine,) = run_engines({"only": timedelta(0)}, RUN_SECONDS)
        assert isinstance(engine.clock, SystemClock)
        assert_each_occurrence_once_and_never_early(schedules, datetime.now(UTC), recorded)
        return

    _local.skew = SKEW
    try:  # the control: the patched local clock really is off
        assert SystemClock().now() - datetime.now(UTC) > SKEW - timedelta(seconds=1)
    finally:
        _local.skew = timedelta(0)
    schedules = create_schedules(database_now())

    with caplog.at_level(logging.INFO, logger="django_cadence"):
        engines = run_engines({"ahead": SKEW, "behind": -SKEW}, RUN_SECONDS)
    until = database_now()

    assert_each_occurrence_once_and_never_early(schedules, until, recorded)
    assert all(isinstance(engine.clock, DatabaseClock) for engine in engines)
    workers = {entry["worker"] for a in Attempt.objects.all() for entry in a.history}
    assert workers == {"ahead", "behind"}, workers  # both engines took part
    skews = [r.getMessage() for r in caplog.records if "clock skew" in r.getMessage()]
    assert any(_skew_of(m) == pytest.approx(300, abs=1) for m in skews), skews
    assert any(_skew_of(m) == pytest.approx(-300, abs=1) for m in skews), skews


def _skew_of(message: str) -> float:
    return float(message.split("local_minus_database=")[1].split("s ")[0])


def test_the_database_clock_reads_the_server_once_per_resync_window(monkeypatch):
    """Between readings the monotonic clock measures elapsed time: no query per *now*, and
    the estimate is never ahead of the server's own clock (never early)."""
    from django.test.utils import CaptureQueriesContext

    ticks = [1000.0]
    monkeypatch.setattr(django_cadence.clock.time, "monotonic", lambda: ticks[0])
    clock = DatabaseClock(resync=5.0)
    server_query = 0 if connection.vendor == "sqlite" else 1
    with CaptureQueriesContext(connection) as first:
        start = clock.now()
    assert len(first) == server_query
    with CaptureQueriesContext(connection) as within:
        ticks[0] += 2.5
        later = clock.now()
    assert len(within) == 0
    assert later - start == timedelta(seconds=2.5 * DatabaseClock.CARRY_RATE)  # never ahead
    with CaptureQueriesContext(connection) as after:
        ticks[0] += 2.5  # the window is over: read the server again
        clock.now()
    assert len(after) == server_query


class ScriptedServer:
    """A server clock and a fake monotonic clock for ``DatabaseClock``: each reading takes
    ``round_trip`` seconds, and the server reads its clock ``stale`` seconds before the
    reading comes back (the interpreter was busy), at ``rate`` server seconds per second."""

    def __init__(self, monkeypatch, clock: DatabaseClock) -> None:
        self.monotonic = 1000.0
        self.server = datetime(2026, 1, 1, tzinfo=UTC)
        self.round_trip = 0.0002
        self.stale = 0.0
        self.rate = 1.0
        monkeypatch.setattr(django_cadence.clock.time, "monotonic", lambda: self.monotonic)
        monkeypatch.setattr(clock, "read", self.read)

    def advance(self, seconds: float) -> None:
        self.monotonic += seconds
        self.server += timedelta(seconds=seconds * self.rate)

    def read(self) -> datetime:
        self.advance(self.round_trip)
        return self.server - timedelta(seconds=self.stale * self.rate)


def test_a_reading_delayed_by_a_busy_interpreter_does_not_set_the_clock_back(monkeypatch):
    """A reading that came back 20 ms late is a looser bound than the estimate carried from
    the previous one: every start until the next reading would be 20 ms late."""
    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    clock.now()
    server.advance(5.0)
    server.round_trip, server.stale = 0.02, 0.02
    estimate = clock.now()  # a new reading, 20 ms stale
    assert estimate <= server.server
    assert server.server - estimate < timedelta(milliseconds=2)


def test_a_server_clock_set_back_is_followed_at_the_next_reading(monkeypatch):
    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    clock.now()
    server.advance(5.0)
    server.server -= timedelta(seconds=3)  # the server's clock is stepped back
    assert clock.now() == server.server
    server.advance(5.0)
    server.server += timedelta(seconds=60)  # and forward
    assert clock.now() == server.server


def test_an_estimate_carried_from_reading_to_reading_adds_up_no_drift(monkeypatch):
    """Carried over a hundred readings from the first (all later ones stale), against a
    server clock 150 parts per million slower than the monotonic clock: never ahead of the
    server, within a window or across readings, and never more than a window's slowest
    carry (1 ms) plus a reading's staleness behind it, however long it is carried."""
    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    server.rate = 1 - 150e-6
    clock.now()
    server.round_trip, server.stale = 0.02, 0.005
    for _ in range(400):
        server.advance(1.25)
        assert clock.now() <= server.server
    assert server.server - clock.now() < timedelta(milliseconds=6)


def test_within_a_window_the_estimate_is_never_ahead_of_a_slower_server(monkeypatch):
    """A fresh, exact reading, then a server clock at the slowest rate the design allows
    (200 parts per million slower than the monotonic clock): counting the window at the
    monotonic clock's rate would put the estimate a millisecond ahead by its end."""
    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    server.rate = 1 - DatabaseClock.MAX_DRIFT
    server.round_trip = 0.0
    assert clock.now() == server.server
    for _ in range(49):
        server.advance(0.1)
        assert clock.estimate() <= server.server
        assert clock.now() <= server.server
    assert server.server - clock.now() < timedelta(microseconds=2)  # and no later than that


def test_while_one_thread_reads_the_server_clock_the_others_carry_the_estimate(monkeypatch):
    """A burst of try threads past the reading's window would each read the server's clock,
    one behind the other: one reads, the rest go on with the estimate meanwhile."""
    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    clock.now()
    server.advance(5.5)
    reads = []
    reading, release = threading.Event(), threading.Event()
    scripted_read = server.read

    def slow_read():
        reads.append(threading.current_thread().name)
        reading.set()
        release.wait(5)
        return scripted_read()

    monkeypatch.setattr(clock, "read", slow_read)
    reader = threading.Thread(target=clock.now, name="reader")
    reader.start()
    assert reading.wait(5)
    carried = clock.now()  # from this thread, while the reader waits on the server
    assert reads == ["reader"]
    # Carried 5.5 s at the slowest rate: behind the server by at most 200 ppm of that.
    assert timedelta(0) <= server.server - carried <= timedelta(seconds=5.5 * 200e-6)
    release.set()
    reader.join(5)
    assert clock.now() >= carried
    assert reads == ["reader"]


def test_the_engine_refresh_reads_the_server_clock_only_near_the_end_of_the_window(
    monkeypatch,
):
    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    reads = []
    scripted_read = server.read
    monkeypatch.setattr(clock, "read", lambda: reads.append(1) or scripted_read())
    clock.refresh(within=1.0)  # never read yet
    server.advance(3.5)
    clock.refresh(within=1.0)
    assert len(reads) == 1
    server.advance(0.6)  # 4.1 s old: it would expire within the second
    clock.refresh(within=1.0)
    assert len(reads) == 2


def test_the_database_clock_estimate_is_never_ahead_of_the_server():
    clock = DatabaseClock(resync=60.0)
    clock.now()
    for _ in range(20):
        estimate = clock.now()
        assert estimate <= DatabaseClock().now()
        time.sleep(0.01)


def test_the_database_clock_reads_the_current_instant_inside_a_transaction():
    """An atomic job reads the clock for its commit late in its own transaction: the reading
    is the server's current time, not the moment the transaction began."""
    from django.db import transaction

    with transaction.atomic():
        began = DatabaseClock().now()  # the transaction has begun on the server
        time.sleep(0.3)
        inside = DatabaseClock().now()
    # A slow machine only makes the difference larger; the transaction's start would make it 0.
    assert inside - began >= timedelta(seconds=0.25)


def test_a_failed_reading_carries_the_estimate_never_early_and_is_not_retried_at_once(
    monkeypatch,
):
    """The server is unreachable when the reading's window ends: the start timer and the try
    threads go on with the estimate carried at the slowest rate (never ahead of the server),
    without waiting on a connection for every *now*; the next reading is tried a window
    later, or at once by the engine's ``refresh``, which reports the failure."""
    from django.db import OperationalError

    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    first = clock.now()
    attempts = []

    def unreachable():
        attempts.append(1)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(clock, "read", unreachable)
    server.advance(6.0)
    carried = clock.now()
    assert first < carried <= server.server
    assert server.server - carried < timedelta(milliseconds=2)
    server.advance(1.0)
    assert clock.now() <= server.server
    assert len(attempts) == 1  # not again within the window after a failure
    with pytest.raises(OperationalError):
        clock.refresh(within=1.0)  # the engine's own reading says the server is gone
    monkeypatch.setattr(clock, "read", server.read)
    server.advance(5.0)
    assert clock.now() == server.server  # read again a window after the failure


def test_without_any_reading_a_failed_one_raises(monkeypatch):
    from django.db import OperationalError

    clock = DatabaseClock(resync=5.0)

    def unreachable():
        raise OperationalError("connection refused")

    monkeypatch.setattr(clock, "read", unreachable)
    with pytest.raises(OperationalError):
        clock.now()


def test_the_estimate_never_reads_the_server_after_the_first_reading(monkeypatch):
    """What the start timer and the try threads read: within the window as ``now`` would,
    past it carried at the slowest rate (never ahead of the server), and never a round trip,
    so a server that hangs holds only the engine's thread, which reads it (``refresh``)."""
    clock = DatabaseClock(resync=5.0)
    server = ScriptedServer(monkeypatch, clock)
    first = clock.estimate()  # no reading yet: the first is taken
    reads = []
    monkeypatch.setattr(clock, "read", lambda: reads.append(1) or server.read())
    server.advance(2.0)
    assert clock.estimate() == first + timedelta(seconds=2.0 * DatabaseClock.CARRY_RATE)
    server.advance(58.0)  # twelve windows past the reading
    carried = clock.estimate()
    assert first < carried <= server.server
    assert server.server - carried < timedelta(milliseconds=15)  # 200 ppm of a minute
    assert reads == []
    clock.refresh(within=1.0)  # the engine's thread reads it
    assert reads == [1]
    assert clock.estimate() == server.server
