"""Health checks for monitors: each reason, through the view and ``cadence_status --check``
(docs/howto/alerting.md). Times are the real clock's: the view reads the engine clock, the
database server's on PostgreSQL and MariaDB."""

import json
import socket
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import path
from django.utils import timezone

from benchmarks.fleet import child_env, database_env
from django_cadence import views
from django_cadence.models import Attempt, Schedule, Worker
from django_cadence.ops import health
from tests.support.commands import run_django

MINUTE = timedelta(minutes=1)
urlpatterns = [path("health/", views.health)]
pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


@pytest.fixture(autouse=True)
def _timing(settings):
    settings.CADENCE_LEASE = 30
    settings.CADENCE_MAX_TICK = 10
    settings.CADENCE_MISFIRE_GRACE = 60


def _worker(*, beat_ago=timedelta(seconds=5), stuck=0):
    now = timezone.now()
    return Worker.objects.create(
        worker_id=f"w-{Worker.objects.count()}",
        host="h",
        pid=1,
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - beat_ago,
        concurrency=4,
        stuck_threads=stuck,
        stuck_since=now - MINUTE if stuck else None,
    )


def _schedule(name, *, due_ago=None, created_ago=timedelta(0), **fields):
    """An interval schedule (hourly), due ``due_ago`` ago if given, else in half an hour
    (its earlier occurrences planned, and none of them succeeded)."""
    now = timezone.now()
    schedule = Schedule.objects.create(
        name=name,
        kind="interval",
        interval=timedelta(hours=1),
        executor="tests.jobs.noop",
        created_at=now - created_ago,
        **fields,
    )
    next_run_at = now - due_ago if due_ago is not None else now + 30 * MINUTE
    previous = next_run_at - schedule.interval
    last_run_at = previous if previous > schedule.created_at else None  # as the planner leaves it
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=next_run_at, last_run_at=last_run_at)
    return schedule


def _get(client, query=""):
    response = client.get(f"/health/{query}")
    return response.status_code, json.loads(response.content)


def _checks(body):
    return [r["check"] for r in body["reasons"]]


def _command(*args):
    out = StringIO()
    try:
        call_command("cadence_status", "--check", *args, stdout=out)
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, out.getvalue()


def test_healthy_fleet_answers_200_and_exits_0(client):
    _worker()
    _schedule("hourly")  # not due yet
    status, body = _get(client)
    assert (status, body["status"], body["reasons"]) == (200, "ok", [])
    code, out = _command()
    assert code == 0
    assert out.splitlines()[0].startswith("CADENCE OK - ")


def test_nothing_due_and_no_worker_is_healthy(client):
    _schedule("hourly")
    assert _get(client)[0] == 200


def test_no_worker_while_work_is_due(client):
    _worker(beat_ago=timedelta(minutes=10))  # lost: silent past 3 x max(lease, tick)
    _schedule("late", due_ago=timedelta(seconds=5))
    status, body = _get(client)
    assert status == 503
    assert body["status"] == "critical"
    assert _checks(body) == ["no_worker"]
    assert body["reasons"][0]["message"].startswith(
        "no worker is running while work is due: the last heartbeat was 600 s ago, at "
    )
    assert body["reasons"][0]["message"].endswith(
        "UTC, from a worker that did not stop (killed, frozen or cut off)"
    )
    code, out = _command()
    assert code == 2
    assert out.splitlines()[0].startswith("CADENCE CRITICAL - no_worker: ")


def test_backlog_when_due_work_waits_past_its_grace(client):
    _worker()
    _schedule("stalled", due_ago=timedelta(minutes=5))
    _schedule("own-grace", due_ago=timedelta(seconds=20), misfire_grace=timedelta(0))
    status, body = _get(client)
    assert status == 503
    assert _checks(body) == ["backlog"]
    assert "grace 70 s" in body["reasons"][0]["message"]  # misfire grace + max tick


def test_backlog_reads_a_schedules_own_grace_and_ready_retries(client):
    _worker()
    schedule = _schedule("retrying", misfire_grace=timedelta(0))
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=timezone.now() - MINUTE,
        status="pending",
        retry_at=timezone.now() - timedelta(seconds=30),
    )
    assert _checks(_get(client)[1]) == ["backlog"]
    Schedule.objects.filter(pk=schedule.pk).update(enabled=False)  # paused: waits on purpose
    assert _get(client)[0] == 200


def test_overdue_schedules_warn_without_naming_them_in_the_view(client):
    _worker()
    _schedule("silent-export", created_ago=timedelta(hours=3))  # two hours + retries passed
    status, body = _get(client)
    assert status == 503
    assert body["status"] == "warning"
    assert _checks(body) == ["overdue"]
    assert "silent-export" not in json.dumps(body)
    status, body = _get(client, "?level=critical")  # warnings are left to the body's reader
    assert (status, body["status"], body["reasons"]) == (200, "ok", [])
    code, out = _command()
    assert code == 1
    assert out.splitlines()[0] == (
        "CADENCE WARNING - overdue: 1 schedule(s) overdue: no success for longer than they may"
    )
    assert "overdue schedule: silent-export" in out


@pytest.mark.django_db(transaction=True)
def test_status_marks_overdue_schedules_in_a_process_as_check_names_them():
    """``cadence_status`` and its ``--json`` mark what ``--check`` names."""
    _worker()
    _schedule("silent-export", created_ago=timedelta(hours=3))
    _schedule("hourly")  # not overdue
    env = child_env(database_env(), {"CADENCE_LEASE": 30, "CADENCE_MAX_TICK": 10})
    plain = run_django("cadence_status", "--settings=tests.settings", env=env, timeout=60)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[1].split()[-1] == "OVERDUE"
    silent = next(line for line in lines if line.startswith("  silent-export"))
    hourly = next(line for line in lines if line.startswith("  hourly"))
    assert silent.split()[-2] == "for"
    assert hourly.split()[-1] == "-"
    assert "Overdue: 1 schedule(s) gone longer without a success than they may" in lines
    as_json = run_django("cadence_status", "--json", "--settings=tests.settings", env=env)
    schedules = {s["name"]: s for s in json.loads(as_json.stdout)["schedules"]}
    assert schedules["silent-export"]["overdue"] is True
    assert schedules["silent-export"]["overdue_since"] is not None
    assert (schedules["hourly"]["overdue"], schedules["hourly"]["overdue_since"]) == (False, None)


def test_stuck_threads_warn(client):
    _worker(stuck=2)
    _worker(stuck=1, beat_ago=timedelta(hours=1))  # lost workers' threads are gone with them
    status, body = _get(client)
    assert status == 503
    assert _checks(body) == ["stuck_threads"]
    assert body["reasons"][0]["message"].startswith("1 worker(s) hold 2 stuck thread(s)")
    code, _ = _command("--json")
    assert code == 1


def test_the_worst_reason_sets_the_level_and_every_reason_is_listed(client):
    _worker(stuck=1)
    _schedule("stalled", due_ago=timedelta(minutes=5))
    _schedule("silent", created_ago=timedelta(hours=3))
    result = health.check(timezone.now())
    assert result.level == "critical"
    assert [r.check for r in result.reasons] == ["backlog", "overdue", "stuck_threads"]
    status, body = _get(client, "?level=critical")
    assert (status, _checks(body)) == (503, ["backlog"])


def test_the_banner_reasons_are_four_reads_at_most(django_assert_max_num_queries):
    _schedule("stalled", due_ago=timedelta(minutes=5))
    with django_assert_max_num_queries(4):
        reasons = health.fleet_reasons(timezone.now())
    assert [r.check for r in reasons] == ["no_worker", "backlog"]


@pytest.mark.django_db(transaction=True)
def test_the_check_command_in_a_process_exits_2_with_its_summary_first():
    _schedule("late", due_ago=timedelta(minutes=5))
    result = run_django(
        "cadence_status",
        "--check",
        "--settings=tests.settings",
        env=child_env(database_env(), {"CADENCE_LEASE": 30, "CADENCE_MAX_TICK": 10}),
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    first, *rest = result.stdout.splitlines()
    assert first.startswith("CADENCE CRITICAL - no_worker: ")
    assert "backlog: due work has waited" in first
    assert [line.split(":")[0] for line in rest] == ["CRITICAL no_worker", "CRITICAL backlog"]


@override_settings(CADENCE_MAX_TICK=10)
def test_the_view_never_caches_and_refuses_posts(client):
    response = client.get("/health/")
    assert "no-cache" in response["Cache-Control"]
    assert client.post("/health/").status_code == 405


def test_ready_attempts_of_paused_schedules_do_not_hide_an_enabled_ones_wait():
    paused = _schedule("paused", enabled=False)
    late = _schedule("late", misfire_grace=timedelta(0))
    now = timezone.now()
    for minutes in range(1, 4):
        Attempt.objects.create(
            schedule=paused,
            occurrence_at=now - timedelta(hours=minutes),
            status="pending",
            retry_at=now - timedelta(hours=minutes),
        )
    Attempt.objects.create(
        schedule=late, occurrence_at=now - MINUTE, status="pending", retry_at=now - MINUTE
    )
    _worker()
    (reason,) = health.fleet_reasons(now)
    assert reason.check == "backlog"
    assert reason.message.startswith("due work has waited 60 s")


def _port_nothing_listens_on() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_the_check_command_says_unknown_when_the_database_cannot_be_reached(as_json):
    # A PostgreSQL server on a port nothing listens on: the driver is there wherever the
    # servers are tested (the lowest-versions run installs only SQLite's).
    pytest.importorskip("psycopg", reason="the PostgreSQL driver, to reach for a server")
    env = child_env(
        {"CADENCE_TEST_DB": "postgresql", "CADENCE_PG_PORT": str(_port_nothing_listens_on())}
    )
    args = ["cadence_status", "--check", "--settings=tests.settings"]
    result = run_django(*args, *(["--json"] if as_json else []), env=env, timeout=60)
    assert result.returncode == 3, result.stderr
    if not as_json:
        assert result.stdout.startswith("CADENCE UNKNOWN - database unavailable: ")
        return
    body = json.loads(result.stdout)
    assert body["status"] == "unknown"
    (reason,) = body["reasons"]
    assert reason["check"] == "database"
    assert reason["message"].startswith("database unavailable: ")


def _ready_in(queue, *, ago=timedelta(seconds=5)):
    """A schedule in ``queue`` with a ready attempt that has waited ``ago``."""
    schedule = _schedule(f"in-{queue}", queue=queue)
    now = timezone.now()
    Attempt.objects.create(
        schedule=schedule, occurrence_at=now - ago, status="pending", retry_at=now - ago
    )
    return schedule


def test_due_work_in_a_queue_no_live_worker_serves_is_named(client):
    Worker.objects.filter(pk=_worker().pk).update(queues="billing:2,default")
    _ready_in("billing")
    _ready_in("reports")
    _ready_in("exports")
    status, body = _get(client)
    assert status == 503
    assert _checks(body) == ["unserved_queue"]
    assert body["reasons"][0]["message"] == (
        "due work waits in queue(s) exports,reports that no live worker serves "
        "(start run_cadence --queues exports,reports)"
    )
    code, out = _command()
    assert code == 2
    assert out.splitlines()[0].startswith("CADENCE CRITICAL - unserved_queue: ")
    assert "exports,reports" in out


def test_a_queue_is_served_by_a_worker_of_every_queue_or_one_naming_it(client):
    Worker.objects.filter(pk=_worker().pk).update(queues="billing")
    _ready_in("reports")
    assert _checks(_get(client)[1]) == ["unserved_queue"]
    Worker.objects.filter(pk=_worker().pk).update(queues="reports")
    assert _get(client)[0] == 200
    Worker.objects.filter(queues="reports").delete()
    _worker()  # every queue
    assert _get(client)[0] == 200


def test_a_lost_worker_does_not_serve_its_queue(client):
    Worker.objects.filter(pk=_worker().pk).update(queues="billing")
    lost = _worker(beat_ago=timedelta(minutes=10))
    Worker.objects.filter(pk=lost.pk).update(queues="reports")
    _ready_in("reports")
    assert _checks(_get(client)[1]) == ["unserved_queue"]


def test_a_paused_schedules_waiting_attempt_is_not_unserved_work(client):
    Worker.objects.filter(pk=_worker().pk).update(queues="billing")
    schedule = _ready_in("reports")
    Schedule.objects.filter(pk=schedule.pk).update(enabled=False)
    assert _get(client)[0] == 200
