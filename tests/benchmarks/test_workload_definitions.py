"""The definitions of W3 under calendars and of W6: the busy schedules' calendars never
exclude the run's days (or W3 would measure schedules that do not fire), the calendars are
valid, and W6 spreads W1's burst over its queues with one worker serving each."""

from datetime import date, timedelta

import pytest

from benchmarks.ours import Cadence
from benchmarks.workloads import (
    W1_COUNT,
    W3_HOLIDAYS,
    W6_QUEUES,
    WorkloadCalendars,
    _burst_groups,
)
from django_cadence.models import calendar_sets
from django_cadence.schedule import calendars as rules_math
from django_cadence.schedule.specs import validate_timezone

MONDAY = date(2026, 12, 7)


def excluded(sets: WorkloadCalendars, names: list[str], day: date) -> bool:
    rows = {
        name: (None, rules_math.parse_rules(name, "exclude", rules, validate_timezone("UTC")))
        for name, rules in sets.definitions.items()
    }
    return any(rules_math.resolve(name, rows).excludes_day(day) for name in names)


@pytest.mark.parametrize("offset", range(7))
def test_the_busy_calendars_exclude_neither_today_nor_tomorrow(offset):
    today = MONDAY + timedelta(days=offset)
    sets = WorkloadCalendars(today)
    assert not excluded(sets, sets.busy, today)
    assert not excluded(sets, sets.busy, today + timedelta(days=1))


def test_the_idle_calendars_exclude_weekends_and_the_holidays():
    sets = WorkloadCalendars(MONDAY)
    holidays = sets.definitions["bench-holidays"]["dates"]
    assert len(holidays) == W3_HOLIDAYS
    assert all(excluded(sets, sets.idle, date.fromisoformat(day)) for day in holidays)
    assert excluded(sets, sets.idle, date(2026, 12, 12))  # a Saturday
    assert not excluded(sets, sets.idle, MONDAY)


def test_the_burst_is_spread_evenly_over_the_queues():
    queues = [f"q{i}" for i in range(1, W6_QUEUES + 1)]
    groups = _burst_groups("w6-", queues=queues)
    assert sum(group["count"] for group in groups) == W1_COUNT
    assert {group["queue"] for group in groups} == set(queues)
    assert max(g["count"] for g in groups) - min(g["count"] for g in groups) <= 1
    assert "queue" not in _burst_groups("w1-", queues=None)[0]


def test_one_worker_per_queue_each_started_with_its_queue(tmp_path):
    system = Cadence("postgresql", workers=1, concurrency=4, run_dir=tmp_path)
    assert system.worker_names() == ["w1"]
    assert system.queue_of("w1") is None
    system.queues, system.queue_concurrency = ["q1", "q2", "q3"], 2
    assert system.worker_names() == ["w1", "w2", "w3"]
    assert [system.queue_of(name) for name in system.worker_names()] == ["q1", "q2", "q3"]
    assert {system.threads_of(name) for name in system.worker_names()} == {2}


@pytest.mark.django_db
def test_the_calendars_are_accepted_by_the_models():
    from benchmarks.ours import make_calendars
    from django_cadence.models import Calendar

    for offset in range(7):
        make_calendars(WorkloadCalendars(MONDAY + timedelta(days=offset)).definitions)
    assert Calendar.objects.count() == 3
    assert calendar_sets.calendar_set(["bench-weekends-open", "bench-holidays"], strict=True)
