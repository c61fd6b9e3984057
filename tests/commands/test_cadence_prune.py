"""``cadence_prune``: finished attempts by age and by count per schedule, in batches."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from django_cadence.models import Attempt, Worker
from tests.support.workers import worker_row

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(make_schedule):
    """Per schedule ``a``: 6 succeeded, 1, 10, ... 50 days old; a dead letter 60 days old; a
    pending and a running attempt 90 days old. Schedule ``b``: 3 recent successes."""
    now = timezone.now()
    a, b = make_schedule(name="a"), make_schedule(name="b")
    for days in (1, 10, 20, 31, 40, 50):
        at = now - timedelta(days=days)
        Attempt.objects.create(schedule=a, occurrence_at=at, status="succeeded", finished_at=at)
    old = now - timedelta(days=60)
    Attempt.objects.create(schedule=a, occurrence_at=old, status="dead_letter", finished_at=old)
    older = now - timedelta(days=90)
    Attempt.objects.create(schedule=a, occurrence_at=older, status="pending", retry_at=older)
    Attempt.objects.create(
        schedule=a,
        occurrence_at=older - timedelta(hours=1),
        status="running",
        claim_token="t",
        lease_until=now,
    )
    for hours in (1, 2, 3):
        at = now - timedelta(hours=hours)
        Attempt.objects.create(schedule=b, occurrence_at=at, status="succeeded", finished_at=at)
    return a, b


def prune(*args):
    out = StringIO()
    call_command("cadence_prune", *args, stdout=out)
    return out.getvalue().strip()


def ages(schedule):
    now = timezone.now()
    return sorted(
        (round((now - at).total_seconds() / 86400), status)
        for at, status in Attempt.objects.filter(schedule=schedule).values_list(
            "occurrence_at", "status"
        )
    )


def test_prune_older_than_deletes_old_finished_attempts_only(history):
    a, b = history
    assert prune("--older-than", "30d") == (
        "deleted 3 finished attempt(s): 3 finished more than 30 days ago; dead letters kept"
    )
    assert ages(a) == [
        (1, "succeeded"),
        (10, "succeeded"),
        (20, "succeeded"),
        (60, "dead_letter"),
        (90, "pending"),
        (90, "running"),
    ]
    assert Attempt.objects.filter(schedule=b).count() == 3


def test_prune_keep_n_per_schedule(history):
    a, b = history
    assert prune("--keep", "2").startswith("deleted 5 finished attempt(s)")
    assert [status for _, status in ages(a)] == [
        "succeeded",
        "succeeded",
        "dead_letter",
        "pending",
        "running",
    ]
    assert ages(a)[:2] == [(1, "succeeded"), (10, "succeeded")]
    assert Attempt.objects.filter(schedule=b).count() == 2


def test_prune_include_dead_letters(history):
    a, _ = history
    prune("--older-than", "30d", "--include-dead-letters")
    assert not Attempt.objects.filter(schedule=a, status="dead_letter").exists()
    assert Attempt.objects.filter(schedule=a, status__in=("pending", "running")).count() == 2


def test_prune_both_rules_count_each_row_once(history):
    message = prune("--older-than", "30d", "--keep", "2", "--dry-run")
    assert message == (
        "would delete 5 finished attempt(s): 3 finished more than 30 days ago, "
        "2 beyond the newest 2 per schedule; dead letters kept"
    )
    assert prune("--older-than", "30d", "--keep", "2").startswith("deleted 5 ")


def test_prune_dry_run_deletes_nothing(history):
    before = Attempt.objects.count()
    assert prune("--keep", "0", "--dry-run").startswith("would delete 9 finished attempt(s)")
    assert Attempt.objects.count() == before


def test_prune_in_small_batches_deletes_the_same(history):
    assert prune("--keep", "0", "--batch-size", "2").startswith("deleted 9 ")
    assert set(Attempt.objects.values_list("status", flat=True)) == {
        "dead_letter",
        "pending",
        "running",
    }


def test_prune_needs_a_rule():
    with pytest.raises(CommandError, match="give --older-than, --keep, or both"):
        prune()


@pytest.mark.parametrize("value", ["30", "0d", "thirty days", "-1d"])
def test_prune_rejects_a_bad_age(value):
    with pytest.raises(CommandError, match=r"older.than"):
        prune("--older-than", value)


def test_prune_removes_workers_stopped_more_than_a_day_ago(db):
    now = timezone.now()
    for worker_id, stopped, beat in (
        ("w-live", None, now),
        ("w-lost-long-ago", None, now - timedelta(days=5)),
        ("w-stopped-today", now - timedelta(hours=2), now - timedelta(hours=2)),
        ("w-stopped-long-ago", now - timedelta(days=2), now - timedelta(days=2)),
    ):
        worker_row(
            worker_id, heartbeat_at=beat, started_at=now - timedelta(days=6), stopped_at=stopped
        )
    assert "would delete 1 worker(s) stopped more than a day ago" in prune(
        "--keep", "10", "--dry-run"
    )
    assert Worker.objects.count() == 4
    assert "deleted 1 worker(s) stopped more than a day ago" in prune("--keep", "10")
    assert set(Worker.objects.values_list("worker_id", flat=True)) == {
        "w-live",
        "w-lost-long-ago",
        "w-stopped-today",
    }
