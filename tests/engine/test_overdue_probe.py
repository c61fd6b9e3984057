"""The engine's overdue probe waits for a quiet moment (docs/design.md, "Overdue schedules"):
it reads and judges every schedule that may be overdue, which takes the interpreter from the
tries it holds, so it never runs while one is due or about to start, but never waits more
than one more period either.
"""

import time
from datetime import timedelta

import pytest

from django_cadence import signals
from django_cadence.engine.tuning import OVERDUE_PROBE, OVERDUE_QUIET
from tests import jobs

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


@pytest.fixture
def sent():
    names = []

    def receiver(sender, schedule, **kwargs):
        names.append(schedule)

    signals.schedule_overdue.connect(receiver, weak=False)
    yield names
    signals.schedule_overdue.disconnect(receiver)


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.005)


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
    engine.tick()  # the first probe: nothing is overdue yet; the next is due 30 s later
    assert sent == []

    # Past its silence and the probe's period, but the minutely try is claimed ahead and
    # starts within the quiet margin: the probe waits.
    clock.advance(seconds=40 - OVERDUE_QUIET / 2)
    engine.tick()
    assert engine.tries.waiting() == 1
    assert sent == []

    clock.advance(seconds=OVERDUE_QUIET / 2)  # the instant: the try starts and ends
    wait_until(lambda: jobs.CALLS == ["m"] and engine.tries.has_unrecorded())
    engine.tick()  # records it; nothing is held any more, so the probe runs
    assert len(engine.tries) == 0
    assert sent == ["silent"]


def test_a_try_claimed_ahead_beyond_the_quiet_margin_does_not_hold_the_probe(
    schedule_at, clock, threaded_engine, sent
):
    silent(schedule_at)
    schedule_at(name="minutely", executor="tests.jobs.noop", interval=MINUTE)
    engine = threaded_engine(concurrency=2)
    engine.tick()
    clock.advance(seconds=59.6)  # 0.4 s before the minutely instant
    engine.tick()
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
    engine.tick()  # the first probe: nothing is overdue yet; the next is due 30 s later
    clock.advance(seconds=10)
    engine.tick()
    wait_until(lambda: jobs.CALLS == ["b"])  # it runs until the gate opens

    clock.advance(seconds=20)  # "silent" is overdue and the probe is due, but a try runs
    engine.tick()
    assert sent == []
    clock.advance(OVERDUE_PROBE - timedelta(seconds=1))
    engine.tick()
    assert sent == []
    clock.advance(seconds=1)  # one period late: it runs anyway
    engine.tick()
    assert sent == ["silent"]
