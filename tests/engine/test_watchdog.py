"""The watchdog (docs/design.md, "A worker cut off from its database"): a try stops once its
worker can no longer prove its claim, on the worker's own monotonic clock, before another
worker may recover it; a try whose job runs on past that ends the worker.

The engine's thread is not blocked here; the watchdog's clock is moved by hand
(``watchdog.monotonic``) and its ``check`` called as its thread would, so every instant is
exact. ``tests/fleet/test_network_cut.py`` shows the same with real processes behind a
network that goes silent.
"""

import logging
import time
from datetime import timedelta

import pytest
from django.db import connection

from django_cadence.engine import recovery
from django_cadence.engine.held import Phase
from django_cadence.engine.tuning import LEASE_MARGIN
from django_cadence.engine.watchdog import CLAIM_LOST_EXIT, claim_deadline, exit_at, nudge_at
from django_cadence.models import Attempt, Status
from tests import jobs
from tests.support.polling import poll_until

pytestmark = pytest.mark.django_db(transaction=True)

LEASE, GRACE = 6.0, 1.0


@pytest.fixture(autouse=True)
def short_lease(settings):
    settings.CADENCE_LEASE = LEASE
    settings.CADENCE_RECOVERY_GRACE = GRACE


class Exits:
    """Stands in for the process's exit: what the watchdog would have said."""

    def __init__(self):
        self.said: list[str] = []

    def __call__(self, why):
        self.said.append(why)


def running(threaded_engine, schedule_at, clock, executor, payload=None, *, in_job=True):
    """An engine whose one try of ``executor`` runs in its thread; its watchdog's clock is
    the test's (``at``) and its exit recorded. It claims nothing more: what it gives up
    stays pending for the test to see."""
    schedule_at(executor=executor, payload=payload or {}, interval=timedelta(minutes=1))
    engine = threaded_engine(concurrency=1)
    clock.advance(seconds=60)
    engine.tick()
    (held,) = engine.tries.held.values()
    exits = Exits()
    engine.watchdog.on_exit = exits
    engine.at = held.confirmed_at
    engine.watchdog.monotonic = lambda: engine.at
    engine.claiming = False
    if in_job:
        poll_until(lambda: held.claim.in_job)
    return engine, held, exits


def test_the_deadline_comes_before_the_earliest_recovery_with_room_to_stop_and_to_exit():
    confirmed = 1000.0
    deadline = claim_deadline(confirmed, LEASE)
    earliest_recovery = confirmed + LEASE + GRACE
    assert confirmed + LEASE - LEASE_MARGIN - 0.01 < deadline < confirmed + LEASE - LEASE_MARGIN
    assert deadline < nudge_at(deadline, GRACE) < exit_at(deadline, GRACE) < earliest_recovery
    # Half the gap is left between the exit and the earliest recovery, with no grace too.
    assert exit_at(deadline, 0.0) < confirmed + LEASE


def test_a_try_is_stopped_at_its_claims_deadline_and_its_loss_written_once_it_ends(
    threaded_engine, schedule_at, clock, caplog
):
    engine, held, exits = running(
        threaded_engine, schedule_at, clock, "tests.jobs.sleep_for", {"seconds": 30}
    )
    deadline = claim_deadline(held.confirmed_at, LEASE)
    engine.at = deadline - 0.01
    engine.watchdog.check()
    assert not held.claim.cancel_event.is_set()

    engine.at = deadline
    with caplog.at_level(logging.WARNING, logger="django_cadence.engine"):
        engine.watchdog.check()
    assert held.expired
    assert held.claim.cancel_event.is_set()  # the job sees context.cancelled and returns
    assert "attempt lost" in caplog.text
    assert "the database has not confirmed it since" in caplog.text
    poll_until(held.done.is_set)
    assert exits.said == []

    engine.tick()  # the engine's thread writes the loss, fenced, as a recovery would
    attempt = Attempt.objects.get()
    assert attempt.status == Status.PENDING
    assert attempt.recoveries == 1
    assert attempt.claim_token is None
    (entry,) = attempt.history
    assert entry["result"] == "lost"
    assert recovery.GAVE_UP in entry["error"]
    assert engine.in_flight == 0
    assert caplog.text.count("attempt lost") == 1


def test_a_renewal_moves_the_deadline_on(threaded_engine, schedule_at, clock):
    engine, held, _ = running(
        threaded_engine, schedule_at, clock, "tests.jobs.sleep_for", {"seconds": 30}
    )
    first = held.confirmed_at
    time.sleep(0.01)
    clock.advance(seconds=LEASE / 3)  # the renewal is due
    engine.tick()
    assert held.confirmed_at > first
    engine.at = claim_deadline(first, LEASE)
    engine.watchdog.check()
    assert not held.expired
    held.claim.cancel_event.set()  # let its thread go


def test_a_try_that_ended_before_its_deadline_is_recorded_not_given_up(
    threaded_engine, schedule_at, clock
):
    engine, held, _ = running(threaded_engine, schedule_at, clock, "tests.jobs.noop", in_job=False)
    poll_until(held.done.is_set)
    engine.at = claim_deadline(held.confirmed_at, LEASE) + 1
    engine.watchdog.check()
    assert not held.expired
    engine.tick()
    assert Attempt.objects.get().status == Status.SUCCEEDED


def test_a_try_claimed_ahead_whose_claim_expired_never_starts(threaded_engine, schedule_at, clock):
    schedule_at(
        executor="tests.jobs.record_call", payload={"label": "x"}, interval=timedelta(minutes=1)
    )
    engine = threaded_engine(concurrency=1)
    clock.advance(seconds=59.7)
    engine.tick()  # claimed ahead: waits on the start timer for the instant
    (held,) = engine.tries.held.values()
    assert held.phase is Phase.AHEAD
    engine.claiming = False
    engine.watchdog.monotonic = lambda: claim_deadline(held.confirmed_at, LEASE)
    engine.watchdog.check()
    jobs.CALLS.clear()
    clock.advance(seconds=0.3)  # its instant comes
    time.sleep(0.3)
    assert jobs.CALLS == []
    engine.tick()
    attempt = Attempt.objects.get()
    assert attempt.status == Status.PENDING
    assert [e["result"] for e in attempt.history] == ["lost"]


def test_a_stopped_try_whose_job_ignores_its_cancel_ends_the_worker(
    threaded_engine, schedule_at, clock, gate
):
    engine, held, exits = running(
        threaded_engine, schedule_at, clock, "tests.jobs.wait_at_gate", {"label": "deaf"}
    )
    deadline = claim_deadline(held.confirmed_at, LEASE)
    engine.at = deadline
    engine.watchdog.check()
    engine.at = exit_at(deadline, GRACE) - 0.01
    engine.watchdog.check()
    assert held.nudged  # its connection was closed under it first: no use here
    assert exits.said == []
    engine.at = exit_at(deadline, GRACE)
    engine.watchdog.check()
    (why,) = exits.said
    assert f"worker exiting worker=worker-t status={CLAIM_LOST_EXIT}" in why
    assert "ignores context.cancelled" in why
    assert "wait_at_gate" in why  # where its thread was
    gate.set()
    poll_until(held.done.is_set)
    engine.tick()  # its thread ended after all: the loss is written, nothing recorded
    assert Attempt.objects.get().status == Status.PENDING


def test_a_lost_try_whose_job_ignores_its_cancel_ends_the_worker_too(
    threaded_engine, schedule_at, clock, gate
):
    """Taken over by another worker (its renewal matched nothing): the same rule."""
    engine, held, exits = running(
        threaded_engine, schedule_at, clock, "tests.jobs.wait_at_gate", {"label": "deaf"}
    )
    Attempt.objects.update(claim_token="someone else's")
    clock.advance(seconds=LEASE / 3)
    engine.tick()
    assert held.told_at is not None
    engine.at = held.told_at + exit_at(0, GRACE)
    engine.watchdog.check()
    assert len(exits.said) == 1
    gate.set()


@pytest.mark.skipif(connection.vendor == "sqlite", reason="a socket to a server")
def test_a_stopped_job_waiting_on_its_database_connection_is_freed_without_an_exit(
    threaded_engine, schedule_at, clock
):
    sleep = "SELECT pg_sleep(30)" if connection.vendor == "postgresql" else "SELECT SLEEP(30)"
    engine, held, exits = running(
        threaded_engine, schedule_at, clock, "tests.jobs.run_sql", {"sql": sleep}
    )
    time.sleep(0.2)  # the statement is on its way
    deadline = claim_deadline(held.confirmed_at, LEASE)
    engine.at = deadline
    engine.watchdog.check()
    engine.at = nudge_at(deadline, GRACE)
    engine.watchdog.check()  # closes the socket under the statement
    poll_until(held.done.is_set)
    engine.at = exit_at(deadline, GRACE)
    engine.watchdog.check()
    assert exits.said == []
    end_server_side(sleep)


def end_server_side(statement):
    """The server runs on a statement whose client went away until it next writes to it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = %s",
                [statement],
            )
        else:
            cursor.execute(
                "SELECT id FROM information_schema.processlist WHERE info = %s", [statement]
            )
            for (thread,) in cursor.fetchall():
                cursor.execute(f"KILL {int(thread)}")


def test_the_watchdog_thread_stops_a_try_on_its_own(threaded_engine, schedule_at, clock, settings):
    """Started as ``run`` starts it, with a lease short enough to run out in the test."""
    settings.CADENCE_LEASE = 1.0
    schedule_at(
        executor="tests.jobs.sleep_for", payload={"seconds": 30}, interval=timedelta(minutes=1)
    )
    engine = threaded_engine(concurrency=1)
    clock.advance(seconds=60)
    engine.tick()
    engine.claiming = False
    (held,) = engine.tries.held.values()
    exits = Exits()
    engine.watchdog.on_exit = exits
    engine.watchdog.start()
    try:
        poll_until(lambda: held.expired, timeout=3)
        poll_until(held.done.is_set)
    finally:
        engine.watchdog.stop()
    assert exits.said == []
    assert held.claim.cancel_event.is_set()
