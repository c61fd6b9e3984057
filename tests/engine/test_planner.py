"""Planning: due occurrences become attempt rows, slot and rows in one transaction."""

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction

from django_cadence.engine import planner
from django_cadence.models import Attempt, Schedule

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def statuses(schedule):
    return list(
        Attempt.objects.filter(schedule=schedule)
        .order_by("occurrence_at")
        .values_list("status", flat=True)
    )


def test_planner_never_early(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE)
    planner.plan_due(clock.advance(seconds=59))
    assert statuses(schedule) == []
    planner.plan_due(clock.advance(seconds=1))
    assert statuses(schedule) == ["pending"]


def test_planner_advances_slot_with_the_row(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE)
    planner.plan_due(clock.advance(MINUTE))
    schedule.refresh_from_db()
    attempt = Attempt.objects.get(schedule=schedule)
    assert attempt.occurrence_at == schedule.last_run_at == clock.now()
    assert schedule.next_run_at == clock.now() + MINUTE
    assert schedule.occurrence_count == 1


def test_planner_crash_between_rows_and_advance_leaves_neither(schedule_at, clock, monkeypatch):
    schedule = schedule_at(interval=MINUTE)

    def crash(*args, **kwargs):
        raise RuntimeError("power cut")

    monkeypatch.setattr(planner, "_advance", crash)  # after the rows, before the slots
    with pytest.raises(RuntimeError):
        planner.plan_due(clock.advance(MINUTE))
    schedule.refresh_from_db()
    assert statuses(schedule) == []
    assert schedule.next_run_at == clock.now()
    assert schedule.occurrence_count == 0


def test_planner_disabled_schedule_never_fires(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE, enabled=False)
    planner.plan_due(clock.advance(minutes=10))
    assert statuses(schedule) == []


def test_planner_outside_bounds_never_fires(schedule_at, clock):
    start = clock.now() + timedelta(minutes=5)
    schedule = schedule_at(interval=MINUTE, start_at=start, end_at=start + 2 * MINUTE)
    for _ in range(10):
        planner.plan_due(clock.advance(MINUTE))
    occurrences = list(
        Attempt.objects.filter(schedule=schedule).values_list("occurrence_at", flat=True)
    )
    assert sorted(occurrences) == [start, start + MINUTE, start + 2 * MINUTE]
    schedule.refresh_from_db()
    assert schedule.is_finished


def test_planner_max_occurrences_counts_skipped_too(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE, max_occurrences=3, overlap="skip_if_running")
    planner.plan_due(clock.advance(MINUTE))
    Attempt.objects.filter(schedule=schedule).update(
        status="running", claim_token="t", lease_until=clock.now() + timedelta(hours=1)
    )
    for _ in range(5):
        planner.plan_due(clock.advance(MINUTE))
    assert statuses(schedule) == ["running", "skipped", "skipped"]
    schedule.refresh_from_db()
    assert schedule.occurrence_count == 3
    assert schedule.is_finished


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("skip", {"missed": 1, "pending": 1}),  # 10 late -> one missed record; on-time one fires
        ("fire_once", {"missed": 1, "pending": 2}),  # latest late + on-time fire
        ("fire_all", {"pending": 11}),
    ],
    ids=["skip", "fire_once", "fire_all"],
)
def test_planner_misfire_policies_after_an_outage(schedule_at, clock, policy, expected):
    schedule = schedule_at(interval=MINUTE, misfire=policy, misfire_grace=timedelta(seconds=30))
    clock.advance(minutes=11)  # occurrences at +1..+11 min; only +11 is within the grace
    planner.plan_due(clock.now())
    counts = {}
    for status in statuses(schedule):
        counts[status] = counts.get(status, 0) + 1
    assert counts == expected
    schedule.refresh_from_db()
    assert schedule.next_run_at == clock.now() + MINUTE
    missed = Attempt.objects.filter(schedule=schedule, status="missed").first()
    if missed:
        late = 10 if policy == "skip" else 9
        assert missed.outcome["missed"] == late
        assert schedule.missed_count == late
        assert f"missed {late} occurrence(s)" in missed.error


def test_planner_fire_all_catches_up_in_batches(schedule_at, clock, settings):
    settings.CADENCE_MAX_CATCHUP = 4
    schedule = schedule_at(interval=MINUTE, misfire="fire_all", overlap="allow")
    clock.advance(minutes=10)
    planner.plan_due(clock.now())
    assert Attempt.objects.filter(schedule=schedule).count() == 4
    planner.plan_due(clock.now())
    planner.plan_due(clock.now())
    occurrences = sorted(
        Attempt.objects.filter(schedule=schedule).values_list("occurrence_at", flat=True)
    )
    created = clock.now() - timedelta(minutes=10)
    assert occurrences == [created + MINUTE * k for k in range(1, 11)]


@pytest.mark.parametrize(
    ("overlap", "expected"),
    [
        ("allow", ["running", "pending", "pending"]),
        ("skip_if_running", ["running", "skipped", "skipped"]),
        ("queue", ["running", "pending", "pending"]),
        ("buffer_one", ["running", "pending", "skipped"]),
        # The third occurrence supersedes the second, still waiting: no backlog.
        ("replace", ["running", "cancelled", "pending"]),
    ],
)
def test_planner_overlap_admission_while_running(schedule_at, clock, overlap, expected):
    schedule = schedule_at(interval=MINUTE, overlap=overlap)
    planner.plan_due(clock.advance(MINUTE))
    Attempt.objects.filter(schedule=schedule).update(
        status="running", claim_token="t", lease_until=clock.now() + timedelta(hours=1)
    )
    planner.plan_due(clock.advance(MINUTE))
    planner.plan_due(clock.advance(MINUTE))
    assert statuses(schedule) == expected
    running = Attempt.objects.get(schedule=schedule, status="running")
    assert running.cancel_requested is (overlap == "replace")


def test_planner_jitter_delays_start_deterministically(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE, jitter=timedelta(seconds=30))
    planner.plan_due(clock.advance(MINUTE))
    attempt = Attempt.objects.get(schedule=schedule)
    delay = attempt.retry_at - attempt.occurrence_at
    assert timedelta(0) <= delay < timedelta(seconds=30)
    from django_cadence.schedule.specs import jitter_delay

    assert delay == jitter_delay(str(schedule.pk), attempt.occurrence_at, timedelta(seconds=30))


def test_planner_one_row_per_occurrence_when_planned_twice(schedule_at, clock):
    schedule = schedule_at(interval=MINUTE)
    now = clock.advance(MINUTE)
    planner.plan_due(now)
    # Another worker with a stale view plans the same slot: a quiet no-op.
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now, last_run_at=None)
    planner.plan_due(now)
    assert Attempt.objects.filter(schedule=schedule).count() == 1


def test_planner_batch_costs_a_fixed_number_of_queries(
    schedule_at, clock, django_assert_num_queries
):
    for _ in range(50):
        schedule_at(interval=MINUTE)
    now = clock.advance(MINUTE)
    # select due + overlap states + insert attempts + update schedules, in a savepoint pair
    with django_assert_num_queries(6):
        result = planner.plan_due(now)
    assert result.schedules == 50
    assert Attempt.objects.count() == 50


def test_planner_nothing_due_is_one_query(clock, django_assert_num_queries):
    # One SELECT, inside the test's savepoint pair (a real engine opens a transaction).
    with django_assert_num_queries(3):
        planner.plan_due(clock.now())


def test_the_due_read_finds_due_schedules_through_the_due_index(clock):
    """Many idle schedules cost the planner nothing: it reads the due index, not the table."""
    from django.db import connection

    idle = [
        Schedule(
            name=f"idle-{i}",
            kind="interval",
            interval=timedelta(days=1),
            executor="tests.jobs.noop",
            created_at=clock.now(),
            next_run_at=clock.now() + timedelta(days=1, seconds=i),
        )
        for i in range(3000)
    ]
    Schedule.objects.bulk_create(idle)
    if connection.vendor == "postgresql":  # fresh statistics (transactional there)
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Schedule._meta.db_table}")
    # No ANALYZE TABLE on MariaDB: it commits the test's transaction. SQLite stays without
    # statistics, as it usually is.
    plan = Schedule.objects.due(clock.now()).order_by("next_run_at")[:500].explain()
    assert "cadence_schedule_due_idx" in plan
    if connection.vendor == "sqlite":  # neither a scan of the table nor a sort
        assert "SCAN" not in plan
        assert "TEMP B-TREE" not in plan


@pytest.mark.parametrize(
    ("overlap", "expected"),
    [
        ("allow", ["pending", "pending"]),
        # docs/design.md, Overlap: an attempt waiting for its retry is still in flight.
        ("skip_if_running", ["pending", "skipped"]),
        ("queue", ["pending", "pending"]),
        ("buffer_one", ["pending", "pending"]),
        ("replace", ["cancelled", "pending"]),
    ],
)
def test_planner_overlap_admission_while_a_retry_waits(schedule_at, clock, overlap, expected):
    schedule = schedule_at(interval=MINUTE, overlap=overlap)
    planner.plan_due(clock.advance(MINUTE))
    Attempt.objects.filter(schedule=schedule).update(
        tries=1, error="boom", retry_at=clock.now() + timedelta(hours=1)
    )
    planner.plan_due(clock.advance(MINUTE))
    assert statuses(schedule) == expected
    later = Attempt.objects.filter(schedule=schedule).order_by("occurrence_at").last()
    if overlap == "skip_if_running":
        assert "waiting for its retry" in later.error


def test_planner_plans_at_most_cadence_plan_batch_schedules_per_call(schedule_at, clock, settings):
    settings.CADENCE_PLAN_BATCH = 2
    schedules = [schedule_at(interval=MINUTE) for _ in range(3)]
    now = clock.advance(MINUTE)

    first = planner.plan_due(now)
    assert (first.schedules, first.more) == (2, True)
    second = planner.plan_due(now)
    assert (second.schedules, second.more) == (1, False)
    assert all(statuses(s) == ["pending"] for s in schedules)


@contextmanager
def lock_waits_at_most(seconds: int):
    """Make this connection's lock waits fail after ``seconds``: a planner that waited for a
    row lock instead of skipping it would fail the test rather than hang it."""
    setting = {
        "postgresql": ("SET lock_timeout = %s", f"{seconds}s", "SET lock_timeout = DEFAULT"),
        "mysql": (
            "SET SESSION innodb_lock_wait_timeout = %s",
            seconds,
            "SET SESSION innodb_lock_wait_timeout = DEFAULT",
        ),
    }[connection.vendor]
    with connection.cursor() as cursor:
        cursor.execute(setting[0], [setting[1]])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(setting[2])


@pytest.mark.servers("row locks")
@pytest.mark.django_db(transaction=True)
def test_the_planner_skips_a_schedule_another_worker_holds_and_plans_the_others(schedule_at, clock):
    """Invariant 2: the planner locks the due schedules with SKIP LOCKED. One whose row
    another worker holds (it is planning it) is left to that worker, without waiting for
    it: the planner plans the others and returns while the lock is still held."""
    held = schedule_at(name="held", interval=MINUTE)
    free = schedule_at(name="free", interval=MINUTE)
    table = connection.ops.quote_name(Schedule._meta.db_table)
    other = connections.create_connection(DEFAULT_DB_ALIAS)  # another worker's session
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", [held.pk])
        with lock_waits_at_most(5):
            result = planner.plan_due(clock.advance(MINUTE))
            # The row is still locked, now that the planner has returned.
            with pytest.raises(DatabaseError), transaction.atomic():
                Schedule.objects.select_for_update(nowait=True).get(pk=held.pk)
        assert (result.schedules, result.attempts) == (1, 1)
        assert statuses(free) == ["pending"]
        assert statuses(held) == []
        held.refresh_from_db()
        assert held.next_run_at == clock.now()  # not advanced: its slot is still to plan
    finally:
        other.rollback()
        other.close()
    planner.plan_due(clock.now())  # released: planned at the next pass
    assert statuses(held) == ["pending"]
