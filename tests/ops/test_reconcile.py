"""Schedules as code: created, updated, kept paused, disabled when gone, and reconciled once."""

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from django_cadence import services, signals
from django_cadence.engine.loop import Engine
from django_cadence.executors import registry as executors
from django_cadence.management.commands.run_cadence import start_up
from django_cadence.models import Attempt, Lock, Schedule
from django_cadence.ops import reconcile
from django_cadence.ops.reconcile import InvalidDeclarations

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
NIGHTLY = {"cron": "0 3 * * *", "executor": "tests.jobs.echo", "payload": {"to": "ops"}}


def scheduled_report(**kwargs):
    """Registered with @job(schedule=...) inside tests only (see ``isolated_jobs``)."""
    return kwargs


@pytest.fixture
def isolated_jobs(monkeypatch):
    """A private copy of the @job registry, so a test's declarations never leak."""
    monkeypatch.setattr(executors, "_registry", dict(executors._registry))
    monkeypatch.setattr(executors, "_functions", dict(executors._functions))


def sync(now=NOW, **kwargs):
    return reconcile.reconcile(now, **kwargs)


def test_reconcile_creates_declared_schedule_owned_by_code(settings):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    result = sync()
    schedule = Schedule.objects.get(name="nightly")
    assert (schedule.kind, schedule.cron, schedule.executor) == (
        "cron",
        "0 3 * * *",
        "tests.jobs.echo",
    )
    assert schedule.payload == {"to": "ops"}
    assert schedule.code_owned
    assert schedule.enabled
    assert schedule.created_at == NOW
    assert schedule.next_run_at == datetime(2026, 6, 2, 3, 0, tzinfo=UTC)
    assert result.lines() == ["+ created nightly (cron '0 3 * * *', tests.jobs.echo)"]


def test_reconcile_infers_kind_and_parses_durations_and_instants(settings):
    settings.CADENCE_SCHEDULES = {
        "poll": {"interval": "00:05:00", "executor": "tests.jobs.noop", "jitter": 3},
        "once": {"run_at": "2026-07-01T00:00:00Z", "executor": "tests.jobs.noop"},
    }
    sync()
    poll, once = Schedule.objects.get(name="poll"), Schedule.objects.get(name="once")
    assert (poll.kind, poll.interval, poll.jitter) == (
        "interval",
        timedelta(minutes=5),
        timedelta(seconds=3),
    )
    assert (once.kind, once.run_at) == ("once", datetime(2026, 7, 1, tzinfo=UTC))


def test_reconcile_declares_how_long_a_schedule_may_go_without_a_success(settings):
    settings.CADENCE_SCHEDULES = {
        "poll": {"interval": "5 minutes", "executor": "tests.jobs.noop", "max_silence": "1h"}
    }
    sync()
    assert Schedule.objects.get(name="poll").max_silence == timedelta(hours=1)


def test_reconcile_updates_code_owned_fields_with_a_diff(settings):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    sync()
    settings.CADENCE_SCHEDULES = {
        "nightly": {**NIGHTLY, "cron": "0 4 * * *", "overlap": "queue", "max_attempts": 5}
    }
    result = sync()
    schedule = Schedule.objects.get(name="nightly")
    assert (schedule.cron, schedule.overlap, schedule.max_attempts) == ("0 4 * * *", "queue", 5)
    assert schedule.next_run_at == datetime(2026, 6, 2, 4, 0, tzinfo=UTC)
    assert result.lines() == [
        "~ updated nightly cron: '0 3 * * *' -> '0 4 * * *'",
        "~ updated nightly overlap: 'skip_if_running' -> 'queue'",
        "~ updated nightly max_attempts: - -> 5",
    ]


def test_reconcile_field_removed_from_code_returns_to_its_default(settings):
    settings.CADENCE_SCHEDULES = {"nightly": {**NIGHTLY, "jitter": 30}}
    sync()
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    assert sync().lines() == ["~ updated nightly jitter: 30s -> 0s"]
    assert Schedule.objects.get(name="nightly").jitter == timedelta(0)


def test_reconcile_keeps_the_operators_pause(settings):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    sync()
    services.pause("nightly", "investigating")
    settings.CADENCE_SCHEDULES = {"nightly": {**NIGHTLY, "payload": {"to": "dev"}}}
    sync()
    schedule = Schedule.objects.get(name="nightly")
    assert schedule.payload == {"to": "dev"}
    assert not schedule.enabled
    assert schedule.pause_reason == "investigating"


def test_reconcile_disables_schedules_gone_from_code_and_keeps_them(
    settings, make_schedule, django_capture_on_commit_callbacks
):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY, "hourly": {**NIGHTLY, "cron": "@hourly"}}
    sync()
    Attempt.objects.create(
        schedule=Schedule.objects.get(name="nightly"),
        occurrence_at=NOW,
        status="succeeded",
        finished_at=NOW,
    )
    admin_made = make_schedule(name="made-in-the-admin")
    settings.CADENCE_SCHEDULES = {"hourly": {**NIGHTLY, "cron": "@hourly"}}
    paused = []

    def receiver(sender, **kwargs):
        paused.append(kwargs["schedule"])

    signals.schedule_paused.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            result = sync()
    finally:
        signals.schedule_paused.disconnect(receiver)
    assert result.lines() == ["- disabled nightly: no longer declared in code"]
    assert paused == ["nightly"]
    gone = Schedule.objects.get(name="nightly")
    assert not gone.enabled
    assert not gone.code_owned
    assert gone.removed_from_code_at == NOW
    assert "removed from code" in gone.pause_reason
    assert gone.attempts.count() == 1
    admin_made.refresh_from_db()
    assert admin_made.enabled  # never owned by code: never touched


def test_reconcile_schedule_declared_again_comes_back_enabled(settings):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    sync()
    settings.CADENCE_SCHEDULES = {}
    sync()
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    result = sync(NOW + timedelta(days=1))
    schedule = Schedule.objects.get(name="nightly")
    assert schedule.enabled
    assert schedule.code_owned
    assert schedule.removed_from_code_at is None
    assert result.lines() == [
        "~ adopted nightly: made outside code, now owned by code",
        "~ enabled nightly: declared in code again",
    ]
    assert Schedule.objects.count() == 1


def test_reconcile_paused_schedule_removed_and_declared_again_stays_paused(settings):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    sync()
    services.pause("nightly", "operator says no")
    settings.CADENCE_SCHEDULES = {}
    assert sync().lines() == [
        "- disabled nightly: no longer declared in code (it was already paused)"
    ]
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    sync()
    schedule = Schedule.objects.get(name="nightly")
    assert not schedule.enabled
    assert schedule.pause_reason == "operator says no"


def test_reconcile_start_paused_creates_the_schedule_paused_with_its_reason(settings):
    settings.CADENCE_SCHEDULES = {
        "nightly": {**NIGHTLY, "start_paused": "disabled in django-celery-beat"},
        "hourly": {**NIGHTLY, "cron": "@hourly", "start_paused": True},
        "daily": {**NIGHTLY, "cron": "@daily", "start_paused": False},
    }
    result = sync()
    rows = {s.name: (s.enabled, s.pause_reason) for s in Schedule.objects.all()}
    assert rows == {
        "nightly": (False, "disabled in django-celery-beat"),
        "hourly": (
            False,
            "start_paused in CADENCE_SCHEDULES['hourly']: resume it when it should run",
        ),
        "daily": (True, ""),
    }
    assert "+ created nightly (cron '0 3 * * *', tests.jobs.echo; paused: disabled in " in (
        "\n".join(result.lines())
    )


def test_reconcile_start_paused_never_undoes_the_operators_resume_or_pause(settings):
    """Read only when the schedule is created: after that, pause and resume are the
    operator's, and a deploy that still (or newly) says start_paused changes nothing."""
    settings.CADENCE_SCHEDULES = {"nightly": {**NIGHTLY, "start_paused": True}}
    sync()
    services.resume("nightly")
    assert sync(NOW + timedelta(hours=1)).changes == []
    assert Schedule.objects.get(name="nightly").enabled
    services.pause("nightly", "operator says no")
    settings.CADENCE_SCHEDULES = {"nightly": {**NIGHTLY, "start_paused": False}}
    assert sync(NOW + timedelta(hours=2)).changes == []
    assert Schedule.objects.get(name="nightly").pause_reason == "operator says no"
    services.resume("nightly")
    settings.CADENCE_SCHEDULES = {"nightly": {**NIGHTLY, "start_paused": "now paused?"}}
    assert sync(NOW + timedelta(hours=3)).changes == []
    assert Schedule.objects.get(name="nightly").enabled


def test_reconcile_start_paused_schedule_back_in_code_stays_paused(settings):
    """Gone from code (disabled by the sync), then declared again with start_paused: it comes
    back paused with the declared reason, not enabled."""
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    sync()
    settings.CADENCE_SCHEDULES = {}
    sync()
    settings.CADENCE_SCHEDULES = {"nightly": {**NIGHTLY, "start_paused": "not yet"}}
    result = sync(NOW + timedelta(days=1))
    schedule = Schedule.objects.get(name="nightly")
    assert (schedule.enabled, schedule.pause_reason) == (False, "not yet")
    assert schedule.removed_from_code_at is None
    assert result.lines()[-1] == ("~ kept paused nightly: declared in code again with start_paused")


@pytest.mark.parametrize("value", [1, "", "   ", None, ["x"]])
def test_reconcile_start_paused_must_be_a_bool_or_a_reason(settings, value):
    settings.CADENCE_SCHEDULES = {"nightly": {**NIGHTLY, "start_paused": value}}
    with pytest.raises(InvalidDeclarations) as excinfo:
        sync()
    assert (
        "start_paused: must be True, False or the pause reason to show (a string), "
        f"not {value!r}." in str(excinfo.value)
    )
    assert not Schedule.objects.exists()


def test_reconcile_adopts_a_schedule_made_in_the_admin(settings, make_schedule):
    make_schedule(name="nightly", kind="cron", cron="0 3 * * *", interval=None)
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    result = sync()
    assert result.lines() == [
        "~ adopted nightly: made outside code, now owned by code",
        "~ updated nightly executor: 'tests.jobs.noop' -> 'tests.jobs.echo'",
        '~ updated nightly payload: {} -> {"to": "ops"}',
    ]
    assert Schedule.objects.get(name="nightly").code_owned


def test_reconcile_twice_changes_nothing_the_second_time(settings):
    settings.CADENCE_SCHEDULES = {
        "nightly": NIGHTLY,
        "poll": {"interval": 60, "executor": "tests.jobs.noop"},
    }
    sync()
    before = {s.name: (s.updated_at, s.next_run_at) for s in Schedule.objects.all()}
    result = sync(NOW + timedelta(minutes=1))
    assert result.changes == []
    assert result.unchanged == ["nightly", "poll"]
    assert {s.name: (s.updated_at, s.next_run_at) for s in Schedule.objects.all()} == before


def test_reconcile_dry_run_writes_nothing(settings, make_schedule):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    sync()
    settings.CADENCE_SCHEDULES = {
        "nightly": {**NIGHTLY, "cron": "0 5 * * *"},
        "new": {"interval": 60, "executor": "tests.jobs.noop"},
    }
    lock_before = list(Lock.objects.values_list("name", "acquired_at"))
    result = sync(NOW + timedelta(hours=1), dry_run=True)
    assert result.lines() == [
        "+ would create new (every 60s, tests.jobs.noop)",
        "~ would update nightly cron: '0 3 * * *' -> '0 5 * * *'",
    ]
    assert list(Schedule.objects.values_list("name", "cron")) == [("nightly", "0 3 * * *")]
    assert list(Lock.objects.values_list("name", "acquired_at")) == lock_before


def test_reconcile_payload_secrets_are_redacted_in_the_diff(settings):
    settings.CADENCE_SCHEDULES = {"s": {**NIGHTLY, "payload": {"api_key": "old-secret"}}}
    sync()
    settings.CADENCE_SCHEDULES = {"s": {**NIGHTLY, "payload": {"api_key": "new-secret"}}}
    (line,) = sync().lines()
    assert "secret" not in line.replace("api_key", "")
    assert line.startswith("~ updated s payload:")


def test_reconcile_invalid_declaration_fails_strict_naming_schedule_and_field(settings):
    settings.CADENCE_SCHEDULES = {
        "good": NIGHTLY,
        "bad": {"cron": "61 * * * *", "executor": "tests.jobs.noop", "colour": "red"},
    }
    with pytest.raises(InvalidDeclarations) as excinfo:
        sync()
    message = str(excinfo.value)
    assert "'bad'" in message
    assert "CADENCE_SCHEDULES['bad']" in message
    assert "cron:" in message
    assert "colour: unknown field" in message
    assert not Schedule.objects.exists()


def test_reconcile_disallowed_executor_is_reported_on_its_field(settings):
    settings.CADENCE_SCHEDULES = {"x": {"cron": "@daily", "executor": "os.system"}}
    with pytest.raises(InvalidDeclarations, match=r"'x'.*executor: Executor 'os.system' is not"):
        sync()


def test_reconcile_not_strict_applies_valid_and_leaves_invalid_alone(settings):
    settings.CADENCE_SCHEDULES = {"good": NIGHTLY, "bad": NIGHTLY}
    sync()
    settings.CADENCE_SCHEDULES = {
        "good": {**NIGHTLY, "cron": "0 6 * * *"},
        "bad": {**NIGHTLY, "misfire": "sometimes"},
    }
    result = sync(strict=False)
    assert [e.name for e in result.errors] == ["bad"]
    assert "misfire" in result.errors[0].errors
    assert Schedule.objects.get(name="good").cron == "0 6 * * *"
    bad = Schedule.objects.get(name="bad")
    assert bad.enabled
    assert bad.code_owned


def test_reconcile_job_schedule_is_named_after_the_job(settings, isolated_jobs):
    executors.job(schedule="*/5 * * * *")(scheduled_report)
    result = sync()
    path = "tests.ops.test_reconcile.scheduled_report"
    schedule = Schedule.objects.get(name=path)
    assert (schedule.cron, schedule.executor, schedule.code_owned) == ("*/5 * * * *", path, True)
    assert result.lines() == [f"+ created {path} (cron '*/5 * * * *', {path})"]


def test_reconcile_job_schedule_dict_and_name_clash(settings, isolated_jobs):
    executors.job(schedule={"interval": 30, "name": "nightly", "payload": {"a": 1}})(
        scheduled_report
    )
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    with pytest.raises(InvalidDeclarations, match="also declared by CADENCE_SCHEDULES"):
        sync()
    settings.CADENCE_SCHEDULES = {}
    sync()
    schedule = Schedule.objects.get(name="nightly")
    assert (schedule.kind, schedule.interval, schedule.payload) == (
        "interval",
        timedelta(seconds=30),
        {"a": 1},
    )


def test_reconcile_job_schedule_rejects_an_executor():
    with pytest.raises(ValueError, match="the job is the executor"):
        executors.job(schedule={"cron": "@daily", "executor": "x.y"})
    with pytest.raises(ValueError, match="cron string or a dict"):
        executors.job(schedule=5)


def test_reconcile_without_declarations_takes_no_lock(django_assert_num_queries):
    with django_assert_num_queries(1):  # is anything owned by code?
        assert sync().changes == []
    assert not Lock.objects.exists()


# --- cadence_sync ------------------------------------------------------------------------


def test_cadence_sync_prints_the_diff_and_summary(settings):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY}
    out = StringIO()
    call_command("cadence_sync", stdout=out)
    assert out.getvalue().splitlines() == [
        "+ created nightly (cron '0 3 * * *', tests.jobs.echo)",
        "1 created, 0 updated, 0 disabled, 0 unchanged",
    ]
    out = StringIO()
    settings.CADENCE_SCHEDULES = {}
    call_command("cadence_sync", "--dry-run", stdout=out)
    assert out.getvalue().splitlines() == [
        "- would disable nightly: no longer declared in code",
        "dry run: 0 would be created, 0 would be updated, 1 would be disabled, 0 unchanged",
    ]
    assert Schedule.objects.get(name="nightly").enabled


def test_cadence_sync_fails_on_an_invalid_schedule_and_changes_nothing(settings):
    settings.CADENCE_SCHEDULES = {"nightly": NIGHTLY, "bad": {"interval": -5, "executor": "x"}}
    with pytest.raises(CommandError) as excinfo:
        call_command("cadence_sync", stdout=StringIO())
    message = str(excinfo.value)
    assert "nothing was changed" in message
    assert "schedule 'bad'" in message
    assert "interval:" in message
    assert "executor:" in message
    assert not Schedule.objects.exists()


def test_cadence_sync_malformed_setting_is_a_command_error(settings):
    settings.CADENCE_SCHEDULES = ["nightly"]
    with pytest.raises(CommandError, match="CADENCE_SCHEDULES must be a dict"):
        call_command("cadence_sync", stdout=StringIO())


# --- at engine start (run_cadence's start-up) --------------------------------------------


def test_engine_start_reconciles_and_logs_invalid_declarations(settings, clock, caplog):
    settings.CADENCE_SCHEDULES = {
        "good": {"interval": 60, "executor": "tests.jobs.noop"},
        "bad": {"cron": "not cron", "executor": "tests.jobs.noop"},
    }
    engine = Engine(clock=clock, worker_id="w-reconcile", inline=True)
    with caplog.at_level(logging.INFO, logger="django_cadence"):
        engine.run(threading.Event(), once=True, shutdown_grace=0, on_start=start_up)
    good = Schedule.objects.get(name="good")
    assert good.code_owned
    assert good.created_at == clock.now()
    assert not Schedule.objects.filter(name="bad").exists()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("'bad'" in m and "cron:" in m for m in errors)
    assert Lock.objects.get(name="reconcile").holder == "w-reconcile"


def test_engine_start_survives_a_malformed_setting(settings, clock, caplog):
    settings.CADENCE_SCHEDULES = "nope"
    engine = Engine(clock=clock, worker_id="w-bad-setting", inline=True)
    engine.run(threading.Event(), once=True, shutdown_grace=0, on_start=start_up)
    assert "not reconciled" in caplog.text


def test_engine_start_reconcile_can_be_turned_off(settings, clock):
    settings.CADENCE_SCHEDULES = {"good": {"interval": 60, "executor": "tests.jobs.noop"}}
    settings.CADENCE_RECONCILE_ON_START = False
    engine = Engine(clock=clock, inline=True)
    engine.run(threading.Event(), once=True, shutdown_grace=0, on_start=start_up)
    assert not Schedule.objects.exists()


# --- many engines at once ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_reconcile_from_two_threads_at_once_creates_once(settings, monkeypatch):
    """The second reconcile waits for the first and then finds nothing to do.

    ``plan`` is slowed down, so without the lock both would plan the same creation (and one
    would fail on the unique name, or both would report it).
    """
    settings.CADENCE_SCHEDULES = {
        "nightly": NIGHTLY,
        "poll": {"interval": 60, "executor": "tests.jobs.noop"},
    }
    original = reconcile.plan

    def slow_plan(*args, **kwargs):
        planned = original(*args, **kwargs)
        time.sleep(0.3)
        return planned

    monkeypatch.setattr(reconcile, "plan", slow_plan)
    start = threading.Barrier(2)
    results, failures = [], []

    def run(holder):
        try:
            start.wait()
            results.append(reconcile.reconcile(NOW, holder=holder))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(f"t{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == []
    created = [line for result in results for line in result.lines()]
    assert sorted(created) == [
        "+ created nightly (cron '0 3 * * *', tests.jobs.echo)",
        "+ created poll (every 60s, tests.jobs.noop)",
    ]
    assert sorted(len(result.changes) for result in results) == [0, 2]
    assert Schedule.objects.count() == 2
