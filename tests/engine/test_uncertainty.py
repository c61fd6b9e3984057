"""A running try marks its attempt uncertain before a step that must not repeat.

docs/design.md, "Lost workers" and "Delivery semantics": the mark is a fenced write committed
before ``mark_uncertain()`` returns; a recovered attempt so marked is dead-lettered with the
reason, never re-run; a try whose outcome the engine records clears it. On the fake clock.
"""

import dataclasses
from datetime import timedelta

import pytest
from django.db import transaction

from benchmarks.fleet import database_env, wait_until
from django_cadence import store
from django_cadence.engine import leases, outcomes, planner, recovery
from django_cadence.engine.execution import run_try
from django_cadence.exceptions import ClaimLost, UncertainNotDurable
from django_cadence.executors.calling import AttemptContext
from django_cadence.models import Attempt, Status
from tests.models import Effect

MINUTE = timedelta(minutes=1)
# Committed rows throughout: an atomic job's mark is written on a connection of its own,
# which would not see the rows of a test wrapped in a transaction.


@pytest.fixture
def running(schedule_at, clock, settings):
    """A claimed try of a due attempt, under a 10 s lease and a 5 s recovery grace."""
    settings.CADENCE_LEASE = 10
    settings.CADENCE_RECOVERY_GRACE = 5
    schedule_at(interval=MINUTE, executor="tests.jobs.noop")
    planner.plan_due(clock.advance(MINUTE))
    [claim] = leases.claim(clock.now(), worker="w1", slots=1)
    return claim


def recover(clock):
    return recovery.recover_expired(clock.advance(seconds=16))


@pytest.mark.django_db(transaction=True)
def test_a_marked_attempt_whose_worker_is_lost_is_dead_lettered_with_the_reason(running, clock):
    running.context().mark_uncertain("charging card")
    assert Attempt.objects.get(pk=running.attempt_id).uncertain == "charging card"

    assert recover(clock) == 1

    attempt = Attempt.objects.get(pk=running.attempt_id)
    assert attempt.status == Status.DEAD_LETTER
    assert "marked itself uncertain (charging card)" in attempt.error
    assert "not re-run automatically" in attempt.error
    assert attempt.uncertain == "charging card"  # kept on the dead letter, for the operator
    assert [entry["result"] for entry in attempt.history] == ["lost"]
    assert leases.claim(clock.advance(MINUTE), worker="w2", slots=1) == []


@pytest.mark.django_db(transaction=True)
def test_an_unmarked_attempt_whose_worker_is_lost_is_retried_and_says_it_was_orphaned(
    running, clock
):
    assert recover(clock) == 1

    attempt = Attempt.objects.get(pk=running.attempt_id)
    assert attempt.status == Status.PENDING
    assert attempt.error.startswith("orphaned: worker crashed or stalled (worker w1 was lost")


@pytest.mark.django_db(transaction=True)
def test_a_lost_attempt_keeps_its_own_last_error(running, clock):
    Attempt.objects.filter(pk=running.attempt_id).update(error="the previous try timed out")
    recover(clock)
    assert Attempt.objects.get(pk=running.attempt_id).error == "the previous try timed out"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ending", ["success", "failure"])
def test_a_try_that_ends_in_the_open_clears_the_mark(running, clock, ending):
    running.context().mark_uncertain("charging card")
    if ending == "success":
        assert outcomes.record_success(running, "charged", clock.now())
    else:
        assert outcomes.record_failure(running, "card declined", clock.now()) == Status.PENDING
    assert Attempt.objects.get(pk=running.attempt_id).uncertain == ""


@pytest.mark.django_db(transaction=True)
def test_an_operator_retry_of_the_dead_letter_clears_the_mark(running, clock):
    from django_cadence import services

    running.context().mark_uncertain("charging card")
    recover(clock)
    assert services.retry(running.attempt_id, now=clock.now()).uncertain == ""


@pytest.mark.django_db(transaction=True)
def test_a_try_that_no_longer_holds_its_attempt_may_not_mark_it(running, clock):
    recover(clock)  # the try is fenced out: its token is cleared

    with pytest.raises(ClaimLost, match="must not be taken"):
        running.context().mark_uncertain("charging card")
    assert Attempt.objects.get(pk=running.attempt_id).uncertain == ""


class Rollback(Exception):
    """Ends the stand-in for an atomic job's transaction as a crash would: rolled back."""


def atomic_job(claim):
    """What an atomic job does: write its effect, mark the step, then its transaction ends."""
    with transaction.atomic():
        Effect.objects.create(key="inside the job's transaction")
        claim.context().mark_uncertain("charging card")
        raise Rollback


@pytest.mark.django_db(transaction=True)
def test_the_mark_survives_the_rollback_of_an_atomic_jobs_transaction(running):
    if not store.of().has_concurrent_writes:  # SQLite: one writer at a time, said at once
        with pytest.raises(UncertainNotDurable):
            atomic_job(running)
        return
    with pytest.raises(Rollback):
        atomic_job(running)
    assert not Effect.objects.exists()
    assert Attempt.objects.get(pk=running.attempt_id).uncertain == "charging card"


def test_a_context_built_outside_the_engine_passes_the_mark_to_its_hook():
    from datetime import UTC, datetime

    marks = []
    context = AttemptContext(
        attempt_id=None,
        schedule_name="s",
        occurrence_at=datetime(2026, 1, 1, tzinfo=UTC),
        try_number=1,
        idempotency_key="k",
        mark=marks.append,
    )
    context.mark_uncertain("charging card")
    assert marks == ["charging card"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("marked", [True, False], ids=["marked", "unmarked"])
def test_a_try_that_ends_without_an_outcome_keeps_its_mark_and_is_dead_lettered(
    running, clock, marked
):
    if marked:
        running.context().mark_uncertain("charging card")

    status = outcomes.record_failure(
        running, "timed out after 5 s", clock.now(), outcome_known=False
    )

    attempt = Attempt.objects.get(pk=running.attempt_id)
    if not marked:
        assert status == attempt.status == Status.PENDING  # retried as any failure
        return
    assert status == attempt.status == Status.DEAD_LETTER
    assert "marked itself uncertain (charging card) and ended without an outcome" in attempt.error
    assert attempt.uncertain == "charging card"


@pytest.mark.django_db(transaction=True)
def test_a_marked_try_that_times_out_is_dead_lettered_not_retried(
    schedule_at, clock, threaded_engine, tmp_path
):
    journal = tmp_path / "journal.txt"
    engine = threaded_engine(concurrency=2)
    schedule_at(
        executor="tests.jobs.charge_card",
        payload={"journal": str(journal), "block": 30},
        interval=timedelta(hours=1),
        max_runtime=timedelta(seconds=5),
        max_attempts=3,
    )
    clock.advance(hours=1)
    engine.tick()
    (flight,) = engine.tries.held.values()
    wait_until(journal.exists, message="the charge")  # marked before it was written

    clock.advance(seconds=6)
    engine.tick()

    attempt = Attempt.objects.get()
    assert attempt.status == Status.DEAD_LETTER
    assert "timed out after 5 s" in attempt.error
    assert "ended without an outcome" in attempt.error
    assert flight.done.wait(5)  # the job saw the cancel event and returned
    assert journal.read_text().count("charged") == 1


@pytest.mark.django_db(transaction=True)
def test_a_shutdown_hand_back_keeps_the_mark_for_the_next_try(running, clock):
    running.context().mark_uncertain("charging card")
    assert leases.release([running], clock.now()) == 1
    assert Attempt.objects.get(pk=running.attempt_id).uncertain == "charging card"

    [again] = leases.claim(clock.now(), worker="w2", slots=1)
    assert recovery.recover_expired(clock.advance(seconds=16)) == 1

    attempt = Attempt.objects.get(pk=again.attempt_id)
    assert attempt.status == Status.DEAD_LETTER
    assert "marked itself uncertain (charging card)" in attempt.error


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_child_process_marks_its_attempt_and_dying_after_it_dead_letters(
    running, clock, monkeypatch, tmp_path
):
    for name, value in database_env().items():  # the child opens this test's database
        monkeypatch.setenv(name, value)
    journal = tmp_path / "journal.txt"
    claim = dataclasses.replace(
        running,
        executor="tests.jobs.charge_card_then_die",
        payload={"journal": str(journal)},
        isolation="process",
    )

    result = run_try(claim, clock.now)

    assert (result.kind, result.outcome_known) == ("error", False)
    assert "child process exited with 3" in result.error
    assert journal.read_text().startswith("charged")
    assert Attempt.objects.get(pk=claim.attempt_id).uncertain == "charging card"
    status = outcomes.record_failure(
        claim, result.error, clock.now(), outcome_known=result.outcome_known
    )
    assert status == Status.DEAD_LETTER
