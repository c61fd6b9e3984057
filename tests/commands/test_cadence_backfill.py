"""``cadence_backfill``: past occurrences planned through the overlap policy, idempotently."""

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_cadence.models import Attempt
from django_cadence.ops import backfill

pytestmark = pytest.mark.django_db

DAY = datetime(2026, 1, 5, tzinfo=UTC)  # long past, whatever the clock says
HOURS = [DAY + timedelta(hours=h) for h in range(5)]


@pytest.fixture
def hourly(make_schedule):
    def factory(**fields):
        fields = {"kind": "cron", "cron": "0 * * * *", "interval": None, **fields}
        return make_schedule(name="hourly", **fields)

    return factory


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("cadence_backfill", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


RANGE = ("--from", "2026-01-05T00:00:00Z", "--to", "2026-01-05T04:00:00Z")


def test_backfill_plans_each_occurrence_as_a_scheduled_attempt(hourly):
    schedule = hourly(overlap="allow", jitter=timedelta(0))
    out, _ = run("hourly", *RANGE)
    attempts = Attempt.objects.filter(schedule=schedule).order_by("occurrence_at")
    assert [a.occurrence_at for a in attempts] == HOURS
    assert {(a.trigger, a.status) for a in attempts} == {("schedule", "pending")}
    assert [a.retry_at for a in attempts] == HOURS
    assert out == (
        "hourly: 5 occurrence(s) from 2026-01-05T00:00:00+00:00 to 2026-01-05T04:00:00+00:00; "
        "0 already had an attempt; planned 5 pending and 0 skipped (overlap=allow)"
    )
    schedule.refresh_from_db()
    assert schedule.occurrence_count == 0  # backfills do not spend max_occurrences


def test_backfill_twice_plans_nothing_new(hourly):
    hourly(overlap="allow")
    run("hourly", *RANGE)
    out, _ = run("hourly", *RANGE)
    assert "5 already had an attempt; planned 0 pending and 0 skipped" in out
    assert Attempt.objects.count() == 5


def test_backfill_goes_through_the_overlap_policy(hourly):
    schedule = hourly(overlap="buffer_one")
    out, _ = run("hourly", *RANGE)
    statuses = list(
        Attempt.objects.filter(schedule=schedule)
        .order_by("occurrence_at")
        .values_list("status", flat=True)
    )
    assert statuses == ["pending", "pending", "skipped", "skipped", "skipped"]
    assert "planned 2 pending and 3 skipped (overlap=buffer_one)" in out


def test_backfill_skip_if_running_skips_while_an_attempt_runs(hourly):
    schedule = hourly(overlap="skip_if_running")
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=DAY - timedelta(days=1),
        status="running",
        claim_token="t",
        lease_until=DAY,
    )
    run("hourly", *RANGE)
    assert set(
        Attempt.objects.filter(schedule=schedule, occurrence_at__gte=DAY).values_list(
            "status", flat=True
        )
    ) == {"skipped"}


def test_backfill_reopens_what_a_misfire_recorded_missed(hourly):
    schedule = hourly(overlap="allow")
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=HOURS[1],
        status="missed",
        finished_at=HOURS[4],
        error="missed 3 occurrence(s) from ... (misfire=skip)",
    )
    out, _ = run("hourly", *RANGE)
    reopened = Attempt.objects.get(schedule=schedule, occurrence_at=HOURS[1])
    assert (reopened.status, reopened.finished_at, reopened.error) == ("pending", None, "")
    assert reopened.history[-1]["result"] == "missed"
    assert "0 already had an attempt" in out
    assert "1 of them missed before" in out
    assert Attempt.objects.filter(schedule=schedule).count() == 5


def test_backfill_dry_run_writes_nothing(hourly):
    hourly(overlap="buffer_one")
    out, _ = run("hourly", *RANGE, "--dry-run", "--batch-size", "1")
    assert "would plan 2 pending and 3 skipped" in out
    assert not Attempt.objects.exists()


def test_backfill_progress_bar_on_stderr_for_long_ranges(hourly):
    hourly(overlap="allow")
    _, err = run("hourly", *RANGE, "--batch-size", "2")
    assert err.startswith("\r[")
    assert "\r[########################      ] 4/5" in err
    assert err.rstrip().endswith("] 5/5")
    _, err = run("hourly", *RANGE)  # one batch: no bar
    assert err == ""


def test_backfill_naive_times_are_read_in_the_schedule_zone(hourly):
    schedule = hourly(overlap="allow", timezone="America/New_York")
    run("hourly", "--from", "2026-01-05T00:00", "--to", "2026-01-05T01:00")
    assert list(
        Attempt.objects.filter(schedule=schedule)
        .order_by("occurrence_at")
        .values_list("occurrence_at", flat=True)
    ) == [datetime(2026, 1, 5, 5, tzinfo=UTC), datetime(2026, 1, 5, 6, tzinfo=UTC)]


def test_backfill_refuses_the_future_and_reversed_ranges(hourly):
    hourly()
    with pytest.raises(CommandError, match="covers the past"):
        run("hourly", "--from", "2026-01-05T00:00:00Z", "--to", "2999-01-01T00:00:00Z")
    with pytest.raises(CommandError, match="ends before it starts"):
        run("hourly", "--from", "2026-01-05T04:00:00Z", "--to", "2026-01-05T00:00:00Z")
    with pytest.raises(CommandError, match="not an ISO 8601"):
        run("hourly", "--from", "yesterday", "--to", "2026-01-05T00:00:00Z")
    with pytest.raises(CommandError, match="No schedule named 'nope'"):
        run("nope", *RANGE)


def test_backfill_function_refuses_a_range_at_the_ends_of_the_calendar(hourly):
    schedule = hourly()
    first = datetime(1, 1, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match=r"within the years 2 to 9998 \(UTC\); this one starts"):
        backfill.backfill(schedule, first, DAY, now=DAY + timedelta(days=1))
    assert not Attempt.objects.exists()


def test_backfill_a_paused_schedule_says_its_attempts_wait(hourly):
    hourly(overlap="allow", enabled=False)
    out, _ = run("hourly", *RANGE)
    assert "is paused" in out


def test_backfill_honours_the_schedule_bounds(hourly):
    schedule = hourly(overlap="allow", start_at=HOURS[2])
    result = backfill.backfill(schedule, HOURS[0], HOURS[4], now=HOURS[4] + timedelta(days=1))
    assert (result.occurrences, result.pending) == (3, 3)
