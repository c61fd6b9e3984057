"""The start timer: items launch on their instant, in order, all that are due at once; an
item taken back before its instant never launches (docs/design.md, "Starting on the
instant"). The fake clock stands still until a test moves it."""

import threading
import time
from datetime import timedelta

import pytest

from django_cadence.engine.start_timer import StartTimer
from tests.support.polling import poll_until


class Launches:
    """What the timer launched, batch by batch."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.changed = threading.Event()

    def __call__(self, items: list[str]) -> None:
        self.batches.append(items)
        self.changed.set()

    def wait(self, batches: int) -> None:
        deadline = time.monotonic() + 5
        while len(self.batches) < batches:
            assert time.monotonic() < deadline, f"launched {self.batches}"
            self.changed.wait(0.05)
            self.changed.clear()


@pytest.fixture
def timer(clock):
    launches = Launches()
    timer = StartTimer(clock.now, launches)
    timer.launches = launches
    yield timer
    timer.close()


def test_items_launch_on_their_instant_all_that_are_due_together(timer, clock):
    at = clock.now() + timedelta(seconds=1)
    for name in ("a", "b"):
        timer.add(at, name)
    timer.add(at + timedelta(seconds=1), "c")
    time.sleep(0.15)  # more than a step of the timer: nothing is due yet
    assert timer.launches.batches == []
    assert (len(timer), timer.next_start()) == (3, at)
    clock.advance(seconds=1)
    timer.launches.wait(1)
    assert timer.launches.batches == [["a", "b"]]
    assert (len(timer), timer.next_start()) == (1, at + timedelta(seconds=1))


def test_an_item_taken_back_never_launches_and_is_not_waited_for(timer, clock):
    first, second = clock.now() + timedelta(seconds=1), clock.now() + timedelta(seconds=2)
    timer.add(first, "gone")
    timer.add(second, "kept")
    assert timer.discard("gone") is True
    assert timer.discard("gone") is False  # taken back already
    assert timer.discard("never-added") is False
    assert (len(timer), timer.next_start()) == (1, second)
    clock.advance(seconds=2)
    timer.launches.wait(1)
    assert timer.launches.batches == [["kept"]]
    assert timer.discard("kept") is False  # launched: too late to take back
    assert (len(timer), timer.next_start()) == (0, None)


def test_take_all_returns_what_was_not_launched_and_leaves_nothing(timer, clock):
    at = clock.now() + timedelta(seconds=1)
    for name in ("a", "b", "c"):
        timer.add(at, name)
    timer.discard("b")
    assert sorted(timer.take_all()) == ["a", "c"]
    assert (len(timer), timer.next_start()) == (0, None)
    clock.advance(seconds=1)
    time.sleep(0.15)
    assert timer.launches.batches == []


@pytest.mark.django_db
def test_an_unreachable_server_when_the_clock_needs_a_reading_does_not_stop_the_timer(
    monkeypatch,
):
    """The database clock's window ends while a try waits for its instant and the server is
    gone (a restart): the timer still launches it on its instant, by the carried estimate."""
    from django.db import OperationalError

    from django_cadence.clock import DatabaseClock

    clock = DatabaseClock(resync=0.05)
    clock.now()

    def unreachable():
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(clock, "read", unreachable)
    launches = Launches()
    timer = StartTimer(clock.now, launches)
    try:
        timer.add(clock.now() + timedelta(seconds=0.3), "a")
        launches.wait(1)
        assert launches.batches == [["a"]]
    finally:
        timer.close()


@pytest.mark.django_db
def test_a_server_that_hangs_holds_neither_the_start_timer_nor_the_try_threads(monkeypatch):
    """The database clock's window ends while the server hangs (an unreachable host): the
    worker's timer and try threads read the estimate (``RunningTries.estimate``) and launch on the
    instant; only the engine's thread would wait on the server."""
    from django.db import OperationalError

    from django_cadence.clock import DatabaseClock
    from django_cadence.engine.tries import HeldTries

    clock = DatabaseClock(resync=0.05)
    clock.now()
    answer = threading.Event()
    reads = []

    def hangs():
        reads.append(1)
        answer.wait(10)
        raise OperationalError("timed out")

    monkeypatch.setattr(clock, "read", hangs)
    tries = HeldTries(clock, 1, inline=False, wake=threading.Event(), on_lost=lambda: None)
    launches = Launches()
    timer = StartTimer(tries.running.estimate, launches)
    try:
        time.sleep(0.1)  # past the reading's window: ``clock.now()`` would read the server
        timer.add(tries.running.estimate() + timedelta(seconds=0.2), "a")
        launches.wait(1)
        assert launches.batches == [["a"]]
        assert reads == []
    finally:
        answer.set()
        timer.close()
        tries.close()


def test_a_launch_that_raises_is_reported_and_the_timer_goes_on(clock):
    """No thread could be made for a try: the timer reports it (the worker is then drained
    and replaced) and does not die with it, so what it holds is still started or taken back."""
    errors: list[Exception] = []
    launches = Launches()

    def launch(items: list[str]) -> None:
        if items == ["a"]:
            raise RuntimeError("can't start new thread")
        launches(items)

    timer = StartTimer(clock.now, launch, on_error=errors.append)
    try:
        timer.add(clock.now() + timedelta(seconds=1), "a")
        timer.add(clock.now() + timedelta(seconds=2), "b")
        clock.advance(seconds=1)
        poll_until(lambda: errors)  # the failed launch is reported
        assert [str(e) for e in errors] == ["can't start new thread"]
        clock.advance(seconds=1)
        launches.wait(1)
        assert launches.batches == [["b"]]
    finally:
        timer.close()
