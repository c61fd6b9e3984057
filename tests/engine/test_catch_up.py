"""What a tick catches up is in the log: per schedule, how many occurrences run and why.

docs/reference/semantics.md ("Misfires"): every occurrence within the misfire grace is on
time, so ``fire_once`` after an outage runs the on-time ones and the latest older one.
"""

import logging
from datetime import timedelta

import pytest

from django_cadence.engine import catch_up, planner
from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db
SECONDS_15 = timedelta(seconds=15)


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.INFO, logger="django_cadence.planner")

    def lines():
        return [r.getMessage() for r in caplog.records if r.name == "django_cadence.planner"]

    return lines


def test_two_minutes_without_an_engine_says_how_many_on_time_occurrences_run(
    schedule_at, clock, log
):
    """The report's case: a 15 s schedule, the default fire_once and 60 s grace, two minutes
    behind: the five within the grace and the latest of the three older ones run."""
    schedule = schedule_at(name="every-15s", interval=SECONDS_15)
    start = clock.now()
    planner.plan_due(clock.advance(seconds=120))
    assert log() == [
        (
            "catching up schedule=every-15s run=6 missed=2 skipped=0 "
            f"since={(start + SECONDS_15).isoformat()}: 5 occurrence(s) within its "
            "misfire_grace (60 s) are on time; misfire=fire_once adds the latest of the 3 "
            "older one(s) and records 2 missed; the 6 run one after another "
            "(overlap=skip_if_running)"
        )
    ]
    assert Attempt.objects.filter(schedule=schedule, status="pending").count() == 6


def test_an_ordinary_tick_says_nothing(schedule_at, clock, log):
    schedule_at(interval=SECONDS_15)
    planner.plan_due(clock.advance(SECONDS_15))
    planner.plan_due(clock.advance(SECONDS_15))
    assert log() == []


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"misfire": "skip"},
            (
                "run=5 missed=3 skipped=0 since={since}: 5 occurrence(s) within its "
                "misfire_grace (60 s) are on time; misfire=skip records the 3 older one(s) "
                "missed; the 5 run one after another (overlap=skip_if_running)"
            ),
        ),
        (
            {"misfire": "fire_all", "overlap": "allow"},
            (
                "run=8 missed=0 skipped=0 since={since}: 5 occurrence(s) within its "
                "misfire_grace (60 s) are on time; misfire=fire_all adds the 3 older one(s); "
                "the 8 may run at once (overlap=allow)"
            ),
        ),
        (
            {"overlap": "replace", "misfire_grace": timedelta(0)},
            (
                "run=1 missed=6 skipped=1 since={since}: 1 occurrence(s) within its "
                "misfire_grace (0 s) are on time; misfire=fire_once adds the latest of the 7 "
                "older one(s) and records 6 missed; overlap=replace skips 1"
            ),
        ),
    ],
    ids=["skip", "fire-all-allow", "replace-no-grace"],
)
def test_each_policy_says_what_it_runs(schedule_at, clock, log, fields, expected):
    schedule_at(name="s", interval=SECONDS_15, **fields)
    start = clock.now()
    planner.plan_due(clock.advance(seconds=120))
    since = (start + SECONDS_15).isoformat()
    assert log() == [f"catching up schedule=s {expected.format(since=since)}"]


def test_the_log_names_ten_schedules_and_counts_the_rest(schedule_at, clock, log):
    for n in range(catch_up.LINES + 3):
        schedule_at(name=f"s{n:02}", interval=timedelta(minutes=1), misfire="skip")
    planner.plan_due(clock.advance(minutes=3))
    lines = log()
    assert len(lines) == catch_up.LINES + 1
    assert all(line.startswith("catching up schedule=s") for line in lines[:-1])
    assert lines[-1] == "catching up 3 more schedule(s) run=6 missed=3 skipped=0: not listed"


def test_hostile_names_stay_on_their_line(schedule_at, clock, log):
    schedule_at(name="evil\nforged line", interval=SECONDS_15)
    planner.plan_due(clock.advance(minutes=2))
    (line,) = log()
    assert line.startswith("catching up schedule=evil\\nforged line run=")
