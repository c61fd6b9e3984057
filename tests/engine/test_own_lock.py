"""A try starts only on a recent sighting of its worker's own session lock held
(docs/design.md, "Lost workers"): another worker recovers its tries only once it has seen
that lock gone for the liveness window, so a try started on a fresh sighting cannot have been
recovered yet, however long its process was paused before."""

import time

import pytest
from django.db import OperationalError

from django_cadence.engine import liveness
from django_cadence.engine.own_lock import OwnLock
from django_cadence.engine.tuning import LIVENESS_WINDOW, START_CONFIRMED

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.servers("session locks"),
]


def stale() -> float:
    """A sighting as a pause leaves it: older than START_CONFIRMED."""
    return time.monotonic() - START_CONFIRMED - 0.1


@pytest.fixture
def lock(lock_freed):
    lock_freed("w-own")  # a test before may have closed its session a moment ago
    held = liveness.SessionLock("w-own")
    assert held.acquire()
    yield held
    held.release()


@pytest.fixture
def own(lock):
    sighting = OwnLock("w-own")
    sighting.held_since(time.monotonic())
    return sighting


def test_the_sighting_a_try_starts_on_is_younger_than_the_liveness_window():
    assert 0 < START_CONFIRMED < LIVENESS_WINDOW.total_seconds()


def test_without_a_session_lock_every_try_starts_without_asking(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert OwnLock("w-leases-alone").may_start()


def test_a_fresh_sighting_starts_a_try_without_asking_the_server(own, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert own.may_start()


def test_a_stale_sighting_asks_the_server_once_and_starts_on_its_answer(
    own, django_assert_num_queries
):
    own.held_since(stale())
    with django_assert_num_queries(1):
        assert own.may_start()
    with django_assert_num_queries(0):  # the look was a sighting: fresh again
        assert own.may_start()


def test_a_lock_found_gone_stops_every_start_until_it_is_held_again_and_reasserted(
    own, lock, lock_freed, django_assert_num_queries
):
    lock.release()  # its session ended: the server frees the lock
    lock_freed("w-own")
    own.held_since(stale())
    assert not own.may_start()
    assert own.gone
    with django_assert_num_queries(0):  # no start, and no more asking, until it is back
        assert not own.may_start(fresh=3600)
    assert lock.acquire()
    own.seen_held(time.monotonic())  # a probe's sighting does not end it: re-assert first
    assert not own.may_start()
    own.held_since(time.monotonic())  # the engine re-asserted its tries
    assert own.may_start()


def test_a_look_overtaken_by_the_lock_seen_gone_starts_nothing(own, monkeypatch):
    """The engine saw the lock gone, and may have taken a new one, while a thread looked:
    the thread may have seen the new lock, held before the tries were re-asserted."""

    def engine_sees_it_gone_meanwhile(worker_id, using=None):
        own.seen_gone()
        return True

    monkeypatch.setattr(liveness, "still_held", engine_sees_it_gone_meanwhile)
    own.held_since(stale())
    assert not own.may_start()


def test_a_server_that_cannot_answer_starts_nothing(own, monkeypatch, caplog):
    def unreachable(worker_id, using=None):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(liveness, "still_held", unreachable)
    own.held_since(stale())
    assert not own.may_start()
    assert not own.gone  # not known gone: the next look asks again
    assert "session lock unknown worker=w-own: server closed the connection" in caplog.text
