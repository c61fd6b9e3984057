"""``cadence_import django-q`` against django-q2's own ``Schedule`` model."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django_q.models import Schedule as QSchedule

from django_cadence.models import Schedule
from django_cadence.ops import importers

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")
FUNC = "tests.peers.tasks.plain_function"


def q(name, schedule_type, **fields):
    return QSchedule.objects.create(name=name, func=FUNC, schedule_type=schedule_type, **fields)


def test_import_django_q_types_keep_wall_time_in_its_zone():
    next_run = datetime(2026, 3, 27, 8, 15, tzinfo=UTC)  # 09:15 in Paris, a Friday
    q("cron", QSchedule.CRON, cron="0 */3 * * mon-fri", kwargs="b=5", args="1")
    q("daily", QSchedule.DAILY, next_run=next_run, args="(1, 3)")
    q("weekly", QSchedule.WEEKLY, next_run=next_run, kwargs="{'a': 1}")
    q("quarterly", QSchedule.QUARTERLY, next_run=next_run, args="1", repeats=4)
    q("minutes", QSchedule.MINUTES, minutes=15, next_run=next_run, args="1")
    q("once", QSchedule.ONCE, next_run=next_run, args="1")
    plan = importers.plan("django-q")
    assert plan.refused == []
    importers.write(plan, paused=False)
    got = {s.name: s for s in Schedule.objects.all()}
    assert (got["cron"].cron, got["cron"].timezone) == ("0 */3 * * mon-fri", "Europe/Paris")
    assert got["cron"].payload == {"a": 1, "b": 5}
    assert (got["daily"].cron, got["daily"].payload) == ("15 9 * * *", {"a": 1, "b": 3})
    assert got["weekly"].cron == "15 9 * * 5"
    assert (got["quarterly"].cron, got["quarterly"].max_occurrences) == ("15 9 27 3,6,9,12 *", 4)
    assert (got["minutes"].interval, got["minutes"].start_at) == (timedelta(minutes=15), next_run)
    assert (got["once"].kind, got["once"].run_at) == ("once", next_run)
    assert got["daily"].misfire == "fire_all"  # django-q2's catch_up, on by default
    # django-q2's own next run after the DST change: the same wall time, as ours
    row = QSchedule.objects.get(name="daily")
    theirs = row.calculate_next_run(datetime(2026, 3, 28, 8, 15, tzinfo=UTC))
    assert got["daily"].upcoming(1, after=datetime(2026, 3, 28, 9, tzinfo=UTC)) == [theirs]


def test_import_django_q_refusals_say_why():
    next_run = datetime(2026, 1, 31, 8, 0, tzinfo=UTC)
    q("month-end", QSchedule.MONTHLY, next_run=next_run, args="1")
    q("biweekly", QSchedule.BIWEEKLY, next_run=next_run, args="1")
    q("dated", QSchedule.DAILY, next_run=next_run, args="1", intended_date_kwarg="day")
    q("finished", QSchedule.DAILY, next_run=next_run, args="1", repeats=0)
    q("nameless-args", QSchedule.DAILY, next_run=next_run, args="1, 2, 3")
    reasons = {r.name: r.reason for r in importers.plan("django-q").refused}
    assert "day 31 of the month" in reasons["month-end"]
    assert "no cron form" in reasons["biweekly"]
    assert "context.occurrence_at" in reasons["dated"]
    assert "no runs left" in reasons["finished"]
    assert "3 positional arguments" in reasons["nameless-args"]


def test_import_django_q_keeps_the_cluster_as_the_queue_notes_hook_and_twice_adds_nothing():
    q("hooked", QSchedule.CRON, cron="*/5 * * * *", args="1", hook="x.y", cluster="east")
    plan = importers.plan("django-q")
    text = "\n".join(plan.lines())
    assert "hook='x.y'" in text
    assert "cluster='east'" not in text
    assert "run_cadence --queues east" in text
    importers.write(plan, paused=True)
    assert Schedule.objects.get(name="hooked").queue == "east"
    assert importers.write(importers.plan("django-q"), paused=True) == []
    assert list(Schedule.objects.values_list("name", "enabled")) == [("hooked", False)]
