"""``cadence_backfill`` run as a user runs it, over a range that reaches the ends of the
calendar: a clear error naming the option, never a traceback."""

import pytest

from benchmarks.fleet import database_env
from tests.support.commands import run_django

pytestmark = pytest.mark.django_db(transaction=True)  # the child reads the rows


def backfill(*args):
    env = {**database_env(), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    return run_django("cadence_backfill", "hourly", *args, env=env, timeout=60)


@pytest.mark.parametrize(
    ("args", "zone", "message"),
    [
        (
            ("--from", "0001-01-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z"),
            "UTC",
            "--from must fall within the years 2 to 9998 (UTC), not 0001-01-01T00:00:00+00:00.",
        ),
        (
            ("--from", "0001-01-01T00:30:00", "--to", "2026-01-01T00:00:00"),
            "Asia/Tokyo",
            (
                "--from '0001-01-01T00:30:00' in Asia/Tokyo is before the year 1 in UTC: it "
                "must fall within the years 2 to 9998 (UTC)."
            ),
        ),
    ],
    ids=["first-instant", "before-year-one-in-utc"],
)
def test_backfill_refuses_a_range_at_the_ends_of_the_calendar(make_schedule, args, zone, message):
    make_schedule(name="hourly", kind="cron", cron="0 * * * *", interval=None, timezone=zone)
    result = backfill(*args)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert message in " ".join(result.stderr.split())
