"""Claims, fenced writes, retries, dead letters and recovery, on the fake clock."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_cadence import services
from django_cadence.engine import leases, outcomes, planner, recovery
from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def due_attempt(schedule_at, clock, **fields):
    schedule = schedule_at(interval=MINUTE, **fields)
    planner.plan_due(clock.advance(MINUTE))
    return schedule, Attempt.objects.get(schedule=schedule)


def test_runner_claim_writes_token_lease_and_try(schedule_at, clock, settings):
    settings.CADENCE_LEASE = 30
    _, attempt = due_attempt(schedule_at, clock)
    (claim,) = leases.claim(clock.now(), worker="w1", slots=4)
    attempt.refresh_from_db()
    assert attempt.status == "running"
    assert attempt.claim_token == claim.token
    assert len(claim.token) > 16  # a random prefix, then the attempt id
    assert claim.token.endswith(str(attempt.pk))
    assert attempt.lease_until == clock.now() + timedelta(seconds=30)
    assert attempt.worker == "w1"
    assert attempt.tries == claim.tries == 1


def test_runner_claim_is_exclusive(schedule_at, clock):
    due_attempt(schedule_at, clock)
    assert len(leases.claim(clock.now(), worker="w1", slots=4)) == 1
    assert leases.claim(clock.now(), worker="w2", slots=4) == []


def test_runner_claim_respects_slots(schedule_at, clock):
    for _ in range(5):
        schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    assert len(leases.claim(clock.now(), worker="w1", slots=3)) == 3
    assert len(leases.claim(clock.now(), worker="w1", slots=3)) == 2


def test_runner_claim_compiles_its_read_once_per_power_of_two_window(schedule_at, clock):
    """Free slots take every value up to a worker's capacity; the read's LIMIT does not."""
    for _ in range(3):
        schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    leases._CANDIDATES._compiled.clear()
    for slots in range(1, 33):
        leases.claim(clock.now(), worker="w1", slots=slots)
    windows = sorted(window for _, _, (window, _queues) in leases._CANDIDATES._compiled)
    assert windows == [8, 16, 32, 64]
    assert all(leases._window(slots) >= slots + 4 for slots in range(1, 200))


def test_runner_fencing_a_worker_that_lost_its_lease_changes_nothing(
    schedule_at, clock, settings, caplog
):
    """Worker 1 stalls past its lease; worker 2 recovers and re-runs; 1's writes are fenced."""
    settings.CADENCE_LEASE = 10
    settings.CADENCE_RECOVERY_GRACE = 0
    _, attempt = due_attempt(schedule_at, clock)
    (stale,) = leases.claim(clock.now(), worker="w1", slots=1)
    clock.advance(seconds=11)
    assert recovery.recover_expired(clock.now()) == 1
    (fresh,) = leases.claim(clock.now(), worker="w2", slots=1)
    assert fresh.token != stale.token

    assert outcomes.record_success(stale, {"from": "w1"}, clock.now()) is False
    assert outcomes.record_failure(stale, "late failure", clock.now()) is None
    assert outcomes.record_cancelled(stale, clock.now(), "late") is False
    # Its renewal re-asserts nothing and names the lost try (docs/design.md, "Lost workers").
    renewal = leases.renew([stale], clock.now() + timedelta(hours=1), worker="w1")
    assert renewal == leases.Renewal(revoked=set(), lost={stale.token})
    assert leases.release([stale], clock.now()) == 0
    attempt.refresh_from_db()
    assert (attempt.status, attempt.worker, attempt.claim_token) == ("running", "w2", fresh.token)
    assert attempt.lease_until == clock.now() + timedelta(seconds=10)
    assert "attempt lost" in caplog.text

    assert outcomes.record_success(fresh, {"from": "w2"}, clock.now()) is True
    attempt.refresh_from_db()
    assert (attempt.status, attempt.outcome) == ("succeeded", {"from": "w2"})


def test_runner_failure_retries_with_backoff_then_dead_letters(schedule_at, clock):
    _, attempt = due_attempt(
        schedule_at,
        clock,
        executor="tests.jobs.raise_error",
        max_attempts=3,
        retry_base=timedelta(seconds=10),
        retry_cap=timedelta(seconds=15),
    )
    expected_delays = [timedelta(seconds=10), timedelta(seconds=15)]
    for try_number in (1, 2):
        (claim,) = leases.claim(clock.now(), worker="w1", slots=1)
        assert outcomes.record_failure(claim, "boom", clock.now()) == "pending"
        attempt.refresh_from_db()
        delay = attempt.retry_at - clock.now()
        nominal = expected_delays[try_number - 1]
        assert nominal * 0.8 <= delay <= nominal
        assert leases.claim(clock.now(), worker="w1", slots=1) == []  # not before retry_at
        clock.set(attempt.retry_at)
    (claim,) = leases.claim(clock.now(), worker="w1", slots=1)
    assert outcomes.record_failure(claim, "boom", clock.now()) == "dead_letter"
    attempt.refresh_from_db()
    assert attempt.status == "dead_letter"
    assert attempt.tries == 3
    assert "no tries left (3 of 3)" in attempt.error
    assert [entry["try"] for entry in attempt.history] == [1, 2, 3]


def test_runner_permanent_dead_letters_at_once(schedule_at, clock):
    _, attempt = due_attempt(schedule_at, clock, max_attempts=5)
    (claim,) = leases.claim(clock.now(), worker="w1", slots=1)
    assert outcomes.record_failure(claim, "nope", clock.now(), permanent=True) == "dead_letter"
    attempt.refresh_from_db()
    assert attempt.tries == 1
    assert "permanent" in attempt.error


def test_runner_serial_schedule_runs_one_at_a_time_in_order(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE, overlap="queue")
    for _ in range(3):
        planner.plan_due(clock.advance(MINUTE))
    (first,) = leases.claim(clock.now(), worker="w1", slots=8)
    assert leases.claim(clock.now(), worker="w2", slots=8) == []
    outcomes.record_success(first, None, clock.now())
    (second,) = leases.claim(clock.now(), worker="w2", slots=8)
    assert second.occurrence_at > first.occurrence_at
    order = list(
        Attempt.objects.filter(schedule=schedule)
        .order_by("occurrence_at")
        .values_list("status", flat=True)
    )
    assert order == ["succeeded", "running", "pending"]


@pytest.mark.parametrize("overlap", ["skip_if_running", "queue", "buffer_one", "replace", "allow"])
def test_runner_a_forced_manual_run_waits_for_the_running_try_of_a_serial_schedule(
    schedule_at, clock, overlap
):
    """Invariant 5: a forced run is never skipped, and under a serial policy it still waits:
    no worker claims it while an attempt of its schedule runs, one does once that ended.
    Under ``allow`` it is claimed beside the running one."""
    schedule, _ = due_attempt(schedule_at, clock, overlap=overlap)
    (running,) = leases.claim(clock.now(), worker="w1", slots=4)
    forced = services.trigger(schedule, now=clock.now(), force=True)
    assert forced.status == "pending"
    if overlap == "allow":
        (claim,) = leases.claim(clock.now(), worker="w2", slots=4)
        assert claim.attempt_id == forced.pk
        return
    assert leases.claim(clock.now(), worker="w2", slots=4) == []
    assert leases.claim(clock.advance(seconds=5), worker="w1", slots=4) == []
    outcomes.record_success(running, None, clock.now())
    (claim,) = leases.claim(clock.now(), worker="w2", slots=4)
    assert claim.attempt_id == forced.pk


def test_runner_claim_stamps_its_start_once_the_rows_are_locked(schedule_at, clock):
    """A serial schedule's next try never starts, on record, before the previous one ended.

    The previous try's success commits while the claim waits (here: between the claim's
    first reading of the clock and its locking read). A start read before the wait would
    be earlier than that finish.
    """
    schedule = schedule_at(interval=MINUTE, overlap="queue")
    for _ in range(2):
        planner.plan_due(clock.advance(MINUTE))
    (first,) = leases.claim(clock.now(), worker="w1", slots=8)
    readings = []

    def engine_clock():
        readings.append(clock.now())
        if len(readings) == 1:  # the previous try finishes while this claim waits
            outcomes.record_success(first, None, clock.advance(seconds=1))
        return readings[-1]

    (second,) = leases.claim(engine_clock, worker="w1", slots=8)
    first_row, second_row = Attempt.objects.filter(schedule=schedule).order_by("occurrence_at")
    assert first_row.finished_at <= second_row.started_at == second.started_at


def test_runner_queue_pending_retry_holds_back_later_occurrences(schedule_at, clock):
    schedule_at(interval=MINUTE, overlap="queue", retry_base=timedelta(minutes=10))
    planner.plan_due(clock.advance(MINUTE))
    (first,) = leases.claim(clock.now(), worker="w1", slots=8)
    outcomes.record_failure(first, "boom", clock.now())
    planner.plan_due(clock.advance(MINUTE))  # a later occurrence is ready now
    assert leases.claim(clock.now(), worker="w1", slots=8) == []


def test_runner_allow_runs_concurrently(schedule_at, clock):
    schedule_at(interval=MINUTE, overlap="allow", misfire="fire_all")
    planner.plan_due(clock.advance(minutes=3))
    assert len(leases.claim(clock.now(), worker="w1", slots=8)) == 3


def test_runner_auto_pause_after_consecutive_dead_letters(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE, max_attempts=1, pause_after_failures=2)
    for _ in range(2):
        planner.plan_due(clock.advance(MINUTE))
        (claim,) = leases.claim(clock.now(), worker="w1", slots=1)
        outcomes.record_failure(claim, "boom", clock.now())
    schedule.refresh_from_db()
    assert schedule.enabled is False
    assert "auto-paused" in schedule.pause_reason
    planner.plan_due(clock.advance(minutes=5))
    assert Attempt.objects.filter(schedule=schedule).count() == 2


def test_runner_heartbeat_renews_every_lease_in_one_statement(
    schedule_at, clock, settings, django_assert_num_queries
):
    settings.CADENCE_LEASE = 30
    for _ in range(3):
        schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    claims = leases.claim(clock.now(), worker="w1", slots=8)
    later = clock.advance(seconds=20)
    with django_assert_num_queries(2):  # renew + read cancel requests
        assert leases.renew(claims, later, worker="w1") == leases.Renewal(set(), set())
    assert set(Attempt.objects.values_list("lease_until", flat=True)) == {
        later + timedelta(seconds=30)
    }


def test_runner_completion_is_one_statement(schedule_at, clock, django_assert_num_queries):
    due_attempt(schedule_at, clock)
    (claim,) = leases.claim(clock.now(), worker="w1", slots=1)
    with django_assert_num_queries(1):
        assert outcomes.record_success(claim, {"ok": True}, clock.now())


@pytest.mark.parametrize(
    ("delivery_job", "recoveries_before", "max_attempts", "expected"),
    [
        ("tests.jobs.noop", 0, 3, "pending"),
        ("tests.jobs.at_most_once_noop", 0, 3, "dead_letter"),
        ("tests.jobs.noop", 2, 5, "dead_letter"),  # third loss: lost its worker repeatedly
        ("tests.jobs.noop", 0, 1, "dead_letter"),  # last try lost
    ],
    ids=["at-least-once-retried", "at-most-once-uncertain", "crash-loop", "no-tries-left"],
)
def test_recovery_of_an_expired_lease(
    schedule_at, clock, settings, delivery_job, recoveries_before, max_attempts, expected
):
    settings.CADENCE_LEASE = 10
    settings.CADENCE_RECOVERY_GRACE = 5
    settings.CADENCE_MAX_RECOVERIES = 3
    _, attempt = due_attempt(schedule_at, clock, executor=delivery_job, max_attempts=max_attempts)
    Attempt.objects.filter(pk=attempt.pk).update(recoveries=recoveries_before)
    leases.claim(clock.now(), worker="w1", slots=1)
    assert recovery.recover_expired(clock.advance(seconds=15)) == 0  # within the grace
    assert recovery.recover_expired(clock.advance(seconds=1)) == 1
    attempt.refresh_from_db()
    assert attempt.status == expected
    assert attempt.claim_token is None
    assert attempt.lease_until is None
    assert attempt.recoveries == recoveries_before + 1
    assert attempt.history[-1]["result"] == "lost"


def test_recovery_pays_nothing_for_the_identity_guard(schedule_at, clock, settings):
    """Invariant 7's ORM guard reads only for a write naming an identity field, which the
    engine's never do: recovering a lost try stays its locking read and one UPDATE."""
    settings.CADENCE_LEASE = 10
    settings.CADENCE_RECOVERY_GRACE = 5
    _, attempt = due_attempt(schedule_at, clock)
    leases.claim(clock.now(), worker="w1", slots=1)
    with CaptureQueriesContext(connection) as queries:
        assert recovery.recover(clock.advance(seconds=16)) == 1
    sql = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert [s.split()[0] for s in sql] == ["SELECT", "UPDATE"]  # the test's savepoint aside
    attempt.refresh_from_db()
    assert attempt.status == "pending"
    assert attempt.recoveries == 1


def test_runner_nothing_runs_while_its_schedule_is_paused(schedule_at, clock):
    schedule, attempt = due_attempt(schedule_at, clock)
    schedule.enabled = False
    schedule.save()
    assert leases.claim(clock.now(), worker="w1", slots=4) == []
    schedule.enabled = True
    schedule.save()
    (claim,) = leases.claim(clock.now(), worker="w1", slots=4)
    assert claim.attempt_id == attempt.pk


def test_runner_successes_are_written_in_one_fenced_statement(
    schedule_at, clock, settings, caplog, django_assert_num_queries
):
    """A batch of successes is one UPDATE; each row gets its own outcome and history."""
    for _ in range(3):
        schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    claims = leases.claim(clock.now(), worker="w1", slots=3)
    assert len(claims) == 3
    done = clock.advance(seconds=1)
    with django_assert_num_queries(1):
        landed = outcomes.record_successes([(c, {"n": i}) for i, c in enumerate(claims)], done)
    assert landed == claims
    for i, c in enumerate(claims):
        row = Attempt.objects.get(pk=c.attempt_id)
        assert (row.status, row.outcome, row.finished_at) == ("succeeded", {"n": i}, done)
        assert [(e["try"], e["result"], e["worker"]) for e in row.history] == [
            (1, "succeeded", "w1")
        ]
        assert row.lease_until is None
        assert row.error == ""
    assert "attempt lost" not in caplog.text


def test_runner_a_batch_of_successes_fences_out_only_the_lost_try(
    schedule_at, clock, settings, caplog
):
    """One try of the batch lost its lease to another worker: the others are written, the
    lost one changes nothing, is logged, and sends no success signal."""
    from django_cadence import signals

    settings.CADENCE_LEASE = 10
    settings.CADENCE_RECOVERY_GRACE = 0
    for _ in range(2):
        schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    kept, stale = leases.claim(clock.now(), worker="w1", slots=2)
    clock.advance(seconds=11)
    leases.renew([kept], clock.now(), worker="w1")  # only the first lease is kept alive
    assert recovery.recover_expired(clock.now()) == 1
    (fresh,) = leases.claim(clock.now(), worker="w2", slots=1)
    assert fresh.attempt_id == stale.attempt_id

    sent: list[int] = []

    def receiver(sender, attempt_id, **kwargs):
        sent.append(attempt_id)

    signals.attempt_succeeded.connect(receiver)
    try:
        landed = outcomes.record_successes([(kept, "w1"), (stale, "late")], clock.now())
    finally:
        signals.attempt_succeeded.disconnect(receiver)
    assert landed == [kept]
    assert sent == [kept.attempt_id]
    assert Attempt.objects.get(pk=kept.attempt_id).status == "succeeded"
    row = Attempt.objects.get(pk=stale.attempt_id)
    assert (row.status, row.worker, row.claim_token, row.outcome) == (
        "running",
        "w2",
        fresh.token,
        None,
    )
    assert f"attempt lost id={stale.attempt_id}" in caplog.text


def test_runner_a_batch_keeps_each_outcome_json_exact(schedule_at, clock):
    """1 and True are equal in Python but not in JSON: each row keeps its own."""
    for _ in range(2):
        schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    one, true = leases.claim(clock.now(), worker="w1", slots=2)
    outcomes.record_successes([(one, 1), (true, True)], clock.now())
    assert Attempt.objects.get(pk=one.attempt_id).outcome == 1
    assert Attempt.objects.get(pk=true.attempt_id).outcome is True


def test_runner_executor_no_longer_allowed_dead_letters_at_once_saying_how_to_fix(
    schedule_at, clock, settings, engine, admin_client
):
    """Retrying cannot make a path allowed: one try, then a dead letter whose note says what
    to do, on the attempt's admin page."""
    _, attempt = due_attempt(schedule_at, clock, max_attempts=3)
    settings.CADENCE_EXECUTORS = []

    engine.tick()

    attempt.refresh_from_db()
    assert (attempt.status, attempt.tries) == ("dead_letter", 1)
    assert attempt.error.startswith("Executor 'tests.jobs.noop' is not allowed")
    assert attempt.error.endswith(
        "[dead letter: executor not allowed, so not retried; allow it again or give the "
        "schedule an allowed executor, then retry this attempt]"
    )
    from django.urls import reverse

    page = admin_client.get(reverse("admin:django_cadence_attempt_change", args=[attempt.pk]))
    text = " ".join(page.content.decode().split())
    assert "add &#x27;tests.jobs.noop&#x27; (or &#x27;tests.jobs.*&#x27;) to CADENCE_EXECUTORS" in (
        text
    )
    assert "executor not allowed, so not retried" in text
