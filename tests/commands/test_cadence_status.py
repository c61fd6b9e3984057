"""``cadence_status``: schedules with next run, last outcome and lag; failures; workers; queue."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from django_cadence.models import Attempt, Schedule, Worker
from django_cadence.ops.status import collect, worker_timeout
from tests.support.workers import live_lost_stopped

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(make_schedule, settings):
    """Three schedules, a dead letter today and one last week, three workers."""
    settings.CADENCE_LEASE = 30
    settings.CADENCE_MAX_TICK = 10
    now = timezone.now()
    ok = make_schedule(name="ok-report")
    failing = make_schedule(name="failing-import")
    late = make_schedule(name="late-sync", enabled=False)
    Attempt.objects.create(
        schedule=ok, occurrence_at=now - timedelta(hours=2), status="missed", finished_at=now
    )
    Attempt.objects.create(
        schedule=ok,
        occurrence_at=now - timedelta(hours=1),
        status="succeeded",
        finished_at=now,
    )
    Attempt.objects.create(
        schedule=failing,
        occurrence_at=now - timedelta(hours=3),
        status="dead_letter",
        finished_at=now - timedelta(hours=3),
        error="ConnectionError: password=hunter2 refused\nTraceback ...",
    )
    Attempt.objects.create(
        schedule=failing,
        occurrence_at=now - timedelta(days=8),
        status="dead_letter",
        finished_at=now - timedelta(days=8),
        error="old",
    )
    Attempt.objects.create(
        schedule=late,
        occurrence_at=now - timedelta(minutes=10),
        status="pending",
        retry_at=now - timedelta(minutes=5),
    )
    live_lost_stopped(now)
    return now


def test_status_worker_timeout_is_three_times_the_longer_of_lease_and_tick(settings):
    settings.CADENCE_LEASE = 30
    settings.CADENCE_MAX_TICK = 60
    assert worker_timeout() == timedelta(minutes=3)


def test_status_collect_reports_schedules_failures_workers_and_queue(fleet):
    report = collect(fleet + timedelta(seconds=1))
    by_name = {s.name: s for s in report.schedules}
    assert list(by_name) == ["failing-import", "late-sync", "ok-report"]
    assert by_name["ok-report"].last_status == "succeeded"
    assert by_name["failing-import"].last_status == "dead_letter"
    assert by_name["late-sync"].last_status is None
    assert by_name["late-sync"].lag_seconds == pytest.approx(301, abs=1)
    assert by_name["ok-report"].lag_seconds is None
    (failing,) = report.failing
    assert (failing.schedule, failing.dead_letters) == ("failing-import", 1)
    assert failing.last_error == "ConnectionError: password=******** refused"
    assert [(w.worker_id, w.state) for w in report.workers] == [
        ("w-live", "live"),
        ("w-lost", "lost"),
    ]
    assert report.queue_depth == 1


def test_status_command_prints_the_tables(fleet):
    out = StringIO()
    call_command("cadence_status", stdout=out)
    text = out.getvalue()
    assert "Schedules (3)" in text
    late = next(line for line in text.splitlines() if "late-sync" in line)
    assert "paused" in late
    assert late.split()[-2:] == ["5m", "-"]  # its lag; not overdue (paused)
    ok = next(line for line in text.splitlines() if "ok-report" in line)
    assert "succeeded" in ok
    assert "Failing: 1 schedule(s) with dead letters in the last 24 h" in text
    assert "failing-import: 1 dead letter(s)" in text
    assert "hunter2" not in text
    assert "Workers: 1 live, 1 lost" in text
    assert "w-stopped" not in text
    assert "Queue: 1 attempt(s) ready to start" in text


def test_status_command_json(fleet):
    out = StringIO()
    call_command("cadence_status", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert [s["name"] for s in data["schedules"]] == ["failing-import", "late-sync", "ok-report"]
    late = data["schedules"][1]
    assert late["enabled"] is False
    assert late["lag_seconds"] >= 300
    assert data["failing"][0]["dead_letters"] == 1
    assert {w["worker_id"]: w["state"] for w in data["workers"]} == {
        "w-live": "live",
        "w-lost": "lost",
    }
    assert data["queue_depth"] == 1
    assert "hunter2" not in out.getvalue()


def test_status_command_on_an_empty_database():
    out = StringIO()
    call_command("cadence_status", stdout=out)
    assert "Schedules (0)" in out.getvalue()
    assert "Workers: 0 live, 0 lost" in out.getvalue()


def test_status_collect_query_count_does_not_grow_with_schedules(
    make_schedule, django_assert_max_num_queries
):
    for _ in range(20):
        make_schedule()
    with django_assert_max_num_queries(8):  # the last of them: the open notification episodes
        collect(timezone.now())


def test_status_command_escapes_control_characters(make_schedule):
    from django_cadence.models import Schedule

    schedule = make_schedule(name="plain")
    Schedule.objects.filter(pk=schedule.pk).update(name="evil\x1b[2Jname")  # past validation
    out = StringIO()
    call_command("cadence_status", stdout=out)
    assert "\x1b" not in out.getvalue()
    assert "evil" in out.getvalue()


def test_status_failing_shows_the_exception_line_of_a_traceback(fleet):
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/jobs.py", line 3, in run\n'
        "    connect(password='hunter2')\n"
        "ConnectionRefusedError: [Errno 111] Connection refused"
    )
    Attempt.objects.filter(status="dead_letter", error__startswith="Connection").update(
        error=traceback
    )
    (failing,) = collect(fleet + timedelta(seconds=1)).failing
    assert failing.last_error == "ConnectionRefusedError: [Errno 111] Connection refused"
    out = StringIO()
    call_command("cadence_status", stdout=out)
    assert "    ConnectionRefusedError: [Errno 111] Connection refused" in out.getvalue()
    assert "Traceback (most recent call last)" not in out.getvalue()


def test_status_command_times_are_to_the_second_and_labelled(fleet):
    from django_cadence.schedule.timefmt import format_instant, format_utc

    ok = Schedule.objects.get(name="ok-report")
    out = StringIO()
    call_command("cadence_status", stdout=out)
    text = out.getvalue()
    row = next(line for line in text.splitlines() if "ok-report" in line)
    assert format_instant(ok.next_run_at, ok.timezone) in row
    failing = next(line for line in text.splitlines() if "failing-import: 1" in line)
    assert failing.endswith(f"last {format_utc(fleet - timedelta(hours=3))}")


def test_status_shows_each_workers_stuck_threads_and_for_how_long(fleet):
    Worker.objects.filter(worker_id="w-live").update(
        stuck_threads=2, stuck_since=fleet - timedelta(minutes=5)
    )
    (live, lost) = collect(fleet).workers
    assert (live.stuck_threads, live.stuck_since) == (2, fleet - timedelta(minutes=5))
    assert lost.stuck_threads == 0
    out = StringIO()
    call_command("cadence_status", stdout=out)
    lines = out.getvalue().splitlines()
    assert "STUCK" in next(line for line in lines if "WORKER" in line)
    assert next(line for line in lines if "w-live" in line).endswith("2 for 5m")
    assert next(line for line in lines if "w-lost" in line).endswith("-")


def test_status_shows_the_queues_each_worker_serves(settings):
    settings.CADENCE_LEASE, settings.CADENCE_MAX_TICK = 30, 10
    now = timezone.now()
    for worker_id, queues in (("w-reports", "reports,billing"), ("w-all", "")):
        Worker.objects.create(
            worker_id=worker_id, host="h", pid=1, started_at=now, heartbeat_at=now, queues=queues
        )
    out = StringIO()
    call_command("cadence_status", stdout=out)
    rows = {
        line.split()[1]: line.split()[6] for line in out.getvalue().splitlines() if " w-" in line
    }
    assert rows == {"w-reports": "reports,billing", "w-all": "*"}
    document = collect(now).as_json()
    assert {w["worker_id"]: w["queues"] for w in document["workers"]} == {
        "w-reports": "reports,billing",
        "w-all": "",
    }
