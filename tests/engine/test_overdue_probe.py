"""The engine's overdue probe (docs/design.md, "Overdue schedules") runs on a thread of its
own, so a slow reading never holds planning and claiming; and it waits for a quiet moment,
since judging every schedule that may be overdue takes the interpreter from the tries this
worker holds: never while one is due or about to start, but never more than a period late.
"""

import threading
from datetime import timedelta

import pytest

import django_cadence.engine.overdue
from django_cadence import signals
from django_cadence.engine.tuning import OVERDUE_PROBE, OVERDUE_QUIET
from tests import jobs
from tests.support.polling import poll_until

# The probe reads on a thread of its own, with its own connection: it sees committed rows.
pytestmark = pytest.mark.django_db(transaction=True)
MINUTE = timedelta(minutes=1)


@pytest.fixture
def sent():
    names = []

    def receiver(sender, schedule, **kwargs):
        names.append(schedule)

    signals.schedule_overdue.connect(receiver, weak=False)
    yield names
    signals.schedule_overdue.disconnect(receiver)


def tick(engine):
    """One tick, then wait for the probe it started, if any."""
    engine.tick()
    engine.overdue.close()


def silent(schedule_at, max_silence=30):
    """A schedule due hourly that may go ``max_silence`` seconds without a success."""
    return schedule_at(
        name="silent",
        executor="tests.jobs.noop",
        interval=timedelta(hours=1),
        max_silence=timedelta(seconds=max_silence),
    )


def test_the_probe_waits_while_a_try_is_about_to_start_and_runs_once_it_is_recorded(
    schedule_at, clock, threaded_engine, sent
):
    jobs.CALLS.clear()
    silent(schedule_at)  # overdue 30 s from now
    schedule_at(
        name="minutely", executor="tests.jobs.record_call", payload={"label": "m"}, interval=MINUTE
    )
    engine = threaded_engine(concurrency=2)
    clock.advance(seconds=20)
    tick(engine)  # the first probe: nothing is overdue yet; the next is due 30 s later
    assert sent == []

    # Past its silence and the probe's period, but the minutely try is claimed ahead and
    # starts within the quiet margin: the probe waits.
    clock.advance(seconds=40 - OVERDUE_QUIET / 2)
    tick(engine)
    assert engine.tries.waiting() == 1
    assert sent == []

    clock.advance(seconds=OVERDUE_QUIET / 2)  # the instant: the try starts and ends
    poll_until(lambda: jobs.CALLS == ["m"] and engine.tries.has_unrecorded())
    tick(engine)  # records it; nothing is held any more, so the probe runs
    assert len(engine.tries) == 0
    assert sent == ["silent"]


def test_a_try_claimed_ahead_beyond_the_quiet_margin_does_not_hold_the_probe(
    schedule_at, clock, threaded_engine, sent
):
    silent(schedule_at)
    schedule_at(name="minutely", executor="tests.jobs.noop", interval=MINUTE)
    engine = threaded_engine(concurrency=2)
    tick(engine)
    clock.advance(seconds=59.6)  # 0.4 s before the minutely instant
    tick(engine)
    assert engine.tries.waiting() == 1
    assert sent == ["silent"]


def test_a_worker_that_is_never_quiet_probes_one_period_late(
    schedule_at, clock, threaded_engine, sent, gate
):
    silent(schedule_at, max_silence=70)
    schedule_at(
        name="blocker", executor="tests.jobs.wait_at_gate", payload={"label": "b"}, interval=MINUTE
    )
    engine = threaded_engine(concurrency=2)
    clock.advance(seconds=50)
    tick(engine)  # the first probe: nothing is overdue yet; the next is due 30 s later
    clock.advance(seconds=10)
    tick(engine)
    poll_until(lambda: jobs.CALLS == ["b"])  # it runs until the gate opens

    clock.advance(seconds=20)  # "silent" is overdue and the probe is due, but a try runs
    tick(engine)
    assert sent == []
    clock.advance(OVERDUE_PROBE - timedelta(seconds=1))
    tick(engine)
    assert sent == []
    clock.advance(seconds=1)  # one period late: it runs anyway
    tick(engine)
    assert sent == ["silent"]


def test_a_slow_probe_holds_neither_the_tick_nor_the_next_probe(
    schedule_at, clock, threaded_engine, sent, monkeypatch
):
    """The reading of a large fleet of schedules can take seconds on a busy server: the
    engine plans and claims meanwhile, and starts no second probe while one reads."""
    silent(schedule_at)
    reading, release = threading.Event(), threading.Event()
    calls = []
    full_reading = django_cadence.engine.overdue.overdue

    def slow_reading(now):
        calls.append(now)
        reading.set()
        release.wait(10)
        return full_reading(now)

    monkeypatch.setattr(django_cadence.engine.overdue, "overdue", slow_reading)
    schedule_at(name="minutely", executor="tests.jobs.noop", interval=MINUTE)
    engine = threaded_engine(concurrency=2)
    clock.advance(seconds=31)  # "silent" is overdue
    engine.tick()
    assert reading.wait(5)
    clock.advance(seconds=28.7)  # a tick while the probe reads: it plans and claims ahead
    engine.tick()
    assert engine.tries.waiting() == 1
    clock.advance(seconds=32.3)  # past the next period, with the first still reading
    engine.tick()
    assert len(calls) == 1
    assert sent == []
    release.set()
    engine.overdue.close()
    assert sent == ["silent"]
