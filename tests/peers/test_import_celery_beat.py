"""``cadence_import celery-beat`` against django-celery-beat's own models and Celery's schedules."""

import ast
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from django_cadence.models import Schedule
from django_cadence.ops import importers
from django_cadence.ops.declarations import Declaration, build
from django_cadence.ops.importers import celery_beat
from tests.peers import settings as settings_module
from tests.peers import tasks

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")


def crontab_task(name, timezone="Europe/Paris", **fields):
    crontab = CrontabSchedule.objects.create(timezone=timezone, **fields)
    return PeriodicTask.objects.create(name=name, task="tests.peers.tasks.ping", crontab=crontab)


def beat_firings(schedule, after, count, tz=None):
    """Beat's own next firings: each the crontab's next slot after the previous one."""
    found, last = [], after
    for _ in range(count):
        start, delta, _now = schedule.remaining_delta(last, tz=tz)
        last = (start + delta).astimezone(UTC)
        found.append(last)
    return found


def imported(name):
    plan = importers.plan("celery-beat")
    importers.write(plan, paused=False)
    return Schedule.objects.get(name=name)


@pytest.mark.parametrize(
    "after",
    [datetime(2026, 3, 27, 10, 0, tzinfo=PARIS), datetime(2026, 10, 23, 13, 0, tzinfo=PARIS)],
    ids=["march-change", "october-change"],
)
def test_import_weekday_crontab_fires_as_beat_across_dst(after):
    row = crontab_task("every-3h", minute="0", hour="*/3", day_of_week="mon-fri")
    schedule = imported("every-3h")
    assert (schedule.cron, schedule.timezone) == ("0 */3 * * mon-fri", "Europe/Paris")
    ours = schedule.upcoming(10, after=after)
    assert ours == beat_firings(row.crontab.schedule, after, 10)
    monday = [t.astimezone(PARIS) for t in ours if t.astimezone(PARIS).weekday() == 0]
    assert [t.hour for t in monday[:3]] == [0, 3, 6]  # wall time kept after the change


def test_import_settings_crontab_is_read_in_celery_timezone():
    """A crontab in CELERY_BEAT_SCHEDULE is beat's app zone (CELERY_TIMEZONE), not UTC."""
    from celery import Celery
    from celery.schedules import crontab
    from django.conf import settings

    schedule = imported("weekday-report")
    assert (schedule.cron, schedule.timezone) == ("0 */3 * * mon-fri", "Europe/Paris")
    assert schedule.payload == {"recipient": "ops@example.com"}
    entry = settings.CELERY_BEAT_SCHEDULE["weekday-report"]["schedule"]
    assert isinstance(entry, crontab)
    app = Celery("project", set_as_current=False)  # as beat configures its app from settings
    app.config_from_object("django.conf:settings", namespace="CELERY")
    assert str(app.timezone) == "Europe/Paris"
    after = datetime(2026, 3, 27, 10, 0, tzinfo=PARIS)
    assert schedule.upcoming(10, after=after) == beat_firings(entry, after, 10, app.timezone)


def test_import_fixed_time_in_the_spring_gap_differs_from_beat_only_on_that_day():
    """``30 2 * * *`` on 29 March 2026 in Paris: 02:30 does not exist. Beat fires at 03:30
    (the wall time read with the winter offset); cadence at 03:00, the change itself (the
    design's gap rule). Every other day is the same instant."""
    row = crontab_task("nightly", minute="30", hour="2")
    after = datetime(2026, 3, 26, 12, 0, tzinfo=PARIS)
    found = next(f for f in celery_beat.collect()[0] if f.name == "nightly")
    diff = "\n".join(importers.build_plan("celery-beat", [found], [], now=after).lines())
    assert (
        "differs from the source: 2026-03-29 03:00 CEST here, 2026-03-29 03:30 CEST there" in diff
    )
    schedule = imported("nightly")
    ours, beats = schedule.upcoming(10, after=after), beat_firings(row.crontab.schedule, after, 10)
    differing = [(a, b) for a, b in zip(ours, beats, strict=True) if a != b]
    assert differing == [
        (datetime(2026, 3, 29, 1, 0, tzinfo=UTC), datetime(2026, 3, 29, 1, 30, tzinfo=UTC))
    ]


def test_import_wildcard_hour_in_the_autumn_fold_fires_both_passes_where_beat_fires_one():
    """``0 * * * *`` on 25 October 2026 in Paris: 02:00 happens twice. Cadence fires at both
    (the design's wildcard rule, real time); beat once, then goes on an hour later."""
    row = crontab_task("hourly", minute="0")
    after = datetime(2026, 10, 25, 0, 30, tzinfo=PARIS)
    found = next(f for f in celery_beat.collect()[0] if f.name == "hourly")
    diff = "\n".join(importers.build_plan("celery-beat", [found], [], now=after).lines())
    assert "differs from the source: 2026-10-25 02:00 CET here, 2026-10-25 03:00 CET there" in diff
    ours = imported("hourly").upcoming(4, after=after)
    beats = beat_firings(row.crontab.schedule, after, 4)
    assert ours[:2] == beats[:2]  # 01:00 and 02:00 summer time
    assert ours[2] == datetime(2026, 10, 25, 1, 0, tzinfo=UTC)  # 02:00 winter time, again
    assert ours[3:] == beats[2:3]  # then both at 03:00 winter time


def test_import_maps_every_periodic_task_field_or_names_it():
    interval = IntervalSchedule.objects.create(every=90, period=IntervalSchedule.SECONDS)
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)
    PeriodicTask.objects.create(
        name="export",
        task="tests.peers.tasks.bound_export",
        interval=interval,
        args='["orders"]',
        kwargs='{"limit": 5}',
        queue="slow",
        priority=3,
        headers='{"x": 1}',
        expire_seconds=120,
        start_time=start,
        expires=None,
        description="Nightly export",
        enabled=False,
    )
    PeriodicTask.objects.create(
        name="once-more",
        task="tests.peers.tasks.ping",
        interval=interval,
        one_off=True,
        expires=end,
    )
    clocked = ClockedSchedule.objects.create(clocked_time=datetime(2026, 6, 1, 8, tzinfo=UTC))
    PeriodicTask.objects.create(
        name="launch", task="tests.peers.tasks.ping", clocked=clocked, one_off=True
    )
    plan = importers.plan("celery-beat")
    text = "\n".join(plan.lines())
    assert plan.refused == []
    importers.write(plan, paused=False)

    export = Schedule.objects.get(name="export")
    assert export.executor == "tests.peers.tasks.bound_export"
    assert export.payload == {"table": "orders", "limit": 5}  # bind=True: self is not a name
    assert export.interval == timedelta(seconds=90)
    assert (export.start_at, export.misfire, export.misfire_grace) == (
        start,
        "skip",
        timedelta(seconds=120),
    )
    assert export.metadata == {"description": "Nightly export"}
    assert (export.enabled, export.pause_reason) == (False, "disabled in django-celery-beat")
    for option in ("priority=3", "headers="):
        assert option in text
    assert export.queue == "slow"  # the queue is kept: only workers serving it run it
    assert "queue='slow'" not in text
    assert "Start a worker for them with run_cadence --queues slow" in text
    assert Schedule.objects.get(name="launch").queue == "default"
    once = Schedule.objects.get(name="once-more")
    assert (once.max_occurrences, once.end_at) == (1, end)
    launch = Schedule.objects.get(name="launch")
    assert (launch.kind, launch.run_at) == ("once", datetime(2026, 6, 1, 8, tzinfo=UTC))


def test_import_settings_entries_float_timedelta_and_expires_option():
    plan = importers.plan("celery-beat")
    importers.write(plan, paused=False)
    fast = Schedule.objects.get(name="every-30-seconds")
    slow = Schedule.objects.get(name="every-ten-minutes")
    assert (fast.kind, fast.interval) == ("interval", timedelta(seconds=30))
    assert (slow.interval, slow.misfire, slow.misfire_grace) == (
        timedelta(minutes=10),
        "skip",
        timedelta(seconds=600),
    )
    assert slow.queue == "slow"
    assert fast.queue == "default"
    assert "options['queue']" not in "\n".join(plan.lines())


def test_import_refuses_what_would_change_meaning_and_says_why():
    solar = SolarSchedule.objects.create(event="sunset", latitude=48.85, longitude=2.35)
    PeriodicTask.objects.create(name="at-sunset", task="tests.peers.tasks.ping", solar=solar)
    interval = IntervalSchedule.objects.create(every=5, period=IntervalSchedule.MINUTES)
    crontab_task("first-monday", minute="0", hour="9", day_of_month="1-7", day_of_week="mon")
    for name, task, args in (
        ("star-args", "tests.peers.tasks.takes_star_args", "[1, 2]"),
        ("unknown-task", "nowhere.tasks.gone", "[1]"),
        ("too-many", "tests.peers.tasks.send_report", '["a", true, 3]'),
    ):
        PeriodicTask.objects.create(name=name, task=task, interval=interval, args=args)
    plan = importers.plan("celery-beat")
    reasons = {refused.name: refused.reason for refused in plan.refused}
    assert "solar schedule" in reasons["at-sunset"]
    assert "matching both day_of_month '1-7' and day_of_week 'mon'" in reasons["first-monday"]
    assert "*args, which a payload cannot fill" in reasons["star-args"]
    assert "nowhere.tasks.gone cannot be imported here" in reasons["unknown-task"]
    assert "3 positional arguments" in reasons["too-many"]
    importers.write(plan, paused=False)
    assert not Schedule.objects.filter(name__in=reasons).exists()


def test_import_refuses_local_time_crontab_without_celery_timezone(settings):
    from celery.schedules import crontab

    del settings.CELERY_TIMEZONE
    settings.CELERY_ENABLE_UTC = False
    settings.CELERY_BEAT_SCHEDULE = {
        "local": {"task": "tests.peers.tasks.ping", "schedule": crontab(minute=0, hour=4)}
    }
    reasons = {r.name: r.reason for r in importers.plan("celery-beat").refused}
    assert "local time of the host" in reasons["local"]
    assert "set CELERY_TIMEZONE" in reasons["local"]
    settings.CELERY_ENABLE_UTC = True
    assert Schedule.objects.count() == 0
    plan = importers.plan("celery-beat")
    assert plan.entries[0].candidate.timezone == "UTC"


def test_import_refuses_a_celery_timezone_it_cannot_resolve(settings):
    settings.CELERY_TIMEZONE = "Mars/Olympus"
    reasons = {r.name: r.reason for r in importers.plan("celery-beat").refused}
    assert "'Mars/Olympus' is not a known IANA zone" in reasons["weekday-report"]


def test_import_unallowed_executor_is_refused_with_the_setting_to_change(settings):
    settings.CADENCE_EXECUTORS = ["tests.jobs.*"]
    reasons = {r.name: r.reason for r in importers.plan("celery-beat").refused}
    assert "CADENCE_EXECUTORS" in reasons["every-30-seconds"]


def test_import_renamed_task_runs_by_its_function_path():
    interval = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    PeriodicTask.objects.create(
        name="renamed", task="reports.renamed", interval=interval, args='["mon"]'
    )
    plan = importers.plan("celery-beat")
    assert plan.refused == []
    schedule = imported("renamed")
    assert (schedule.executor, schedule.payload) == ("tests.peers.tasks.renamed", {"day": "mon"})


def test_import_dry_run_writes_nothing_and_write_twice_adds_nothing():
    crontab_task("every-3h", minute="0", hour="*/3", day_of_week="mon-fri")
    plan = importers.plan("celery-beat")
    assert Schedule.objects.count() == 0
    assert plan.summary(written=False).startswith("celery-beat: 4 to create, 0 already imported")
    importers.write(plan, paused=True)
    assert Schedule.objects.filter(enabled=False).count() == 4
    again = importers.plan("celery-beat")
    assert [e.action for e in again.entries] == ["unchanged"] * 4
    assert importers.write(again, paused=True) == []
    assert Schedule.objects.count() == 4


def test_import_existing_schedule_that_differs_is_kept_and_shown(make_schedule):
    make_schedule(name="every-30-seconds", executor="tests.jobs.noop")
    plan = importers.plan("celery-beat")
    entry = next(e for e in plan.entries if e.found.name == "every-30-seconds")
    assert entry.action == "differs"
    assert "! every-30-seconds: a schedule of this name exists and differs; kept:" in plan.lines()
    importers.write(plan, paused=False)
    assert Schedule.objects.get(name="every-30-seconds").executor == "tests.jobs.noop"


def test_import_settings_block_is_python_that_cadence_schedules_accepts():
    block = importers.plan("celery-beat").settings_block()
    namespace: dict[str, object] = {}
    exec(compile(block, "settings.py", "exec"), namespace)  # as a settings module runs it
    schedules = namespace["CADENCE_SCHEDULES"]
    (assignment,) = ast.parse(block).body
    values = assignment.value.values[1:]  # after the merge of what was there
    assert [ast.literal_eval(value) for value in values] == list(schedules.values())
    assert set(schedules) == {"weekday-report", "every-30-seconds", "every-ten-minutes"}
    for name, fields in schedules.items():
        build(Declaration(name, "pasted", fields))  # raises DeclarationError if not accepted
    assert schedules["every-ten-minutes"]["queue"] == "slow"


def test_import_settings_block_keeps_the_schedules_declared_above_it(settings):
    """Pasted below a CADENCE_SCHEDULES, the block adds to it; a name that code declares
    already is left out (the declaration stays as it is), saying where it is declared."""
    mine = {"interval": 60, "executor": "tests.jobs.noop"}
    settings.CADENCE_SCHEDULES = {"mine": mine, "every-30-seconds": mine}
    block = importers.plan("celery-beat").settings_block()
    namespace: dict[str, object] = {}
    pasted = f"CADENCE_SCHEDULES = {settings.CADENCE_SCHEDULES!r}\n{block}"
    exec(compile(pasted, "settings.py", "exec"), namespace)
    schedules = namespace["CADENCE_SCHEDULES"]
    assert list(schedules) == ["mine", "every-30-seconds", "weekday-report", "every-ten-minutes"]
    assert schedules["every-30-seconds"] == mine
    assert (
        "# Left out: every-30-seconds is declared already, in "
        "CADENCE_SCHEDULES['every-30-seconds']." in block
    )


def test_imported_bound_task_runs_with_its_payload():
    """Celery tasks run in process as executors; a bound task's retries read 0 here."""
    from django_cadence.executors.allow_list import resolve

    schedule = imported("weekday-report")
    tasks.calls.clear()
    resolve(schedule.executor)(**schedule.payload)
    assert tasks.calls == [("send_report", {"recipient": "ops@example.com", "urgent": False})]


def test_imported_bind_true_task_runs_and_reads_no_celery_retries():
    """A bind=True task runs in process; Celery's ``self.request.retries`` stays 0 here."""
    from django_cadence.executors.allow_list import resolve

    interval = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    PeriodicTask.objects.create(
        name="export", task="tests.peers.tasks.bound_export", interval=interval, args='["orders"]'
    )
    schedule = imported("export")
    tasks.calls.clear()
    resolve(schedule.executor)(**schedule.payload)
    assert tasks.calls == [("bound_export", {"table": "orders", "limit": 100, "retries": 0})]


def test_bound_task_reads_its_try_from_the_context():
    """The guide's advice for bind=True tasks: ``context.try_number``, not Celery's retries."""
    from django_cadence.executors.calling import AttemptContext, call

    context = AttemptContext(1, "export", datetime(2026, 1, 1, tzinfo=UTC), 2, "key")
    tasks.calls.clear()
    call(tasks.bound_with_context, {"table": "orders"}, context)
    assert tasks.calls == [("bound_with_context", {"table": "orders", "try": 2})]


def test_import_settings_entry_options_and_beats_own_housekeeping(settings):
    from celery.schedules import schedule

    ends = datetime(2027, 1, 1, tzinfo=UTC)
    settings.CELERY_BEAT_SCHEDULE = {
        "until-new-year": {
            "task": "tests.peers.tasks.ping",
            "schedule": schedule(run_every=timedelta(hours=1)),
            "options": {"expires": ends, "priority": 5},
        },
        "celery.backend_cleanup": {"task": "celery.backend_cleanup", "schedule": 3600.0},
    }
    plan = importers.plan("celery-beat")
    reasons = {r.name: r.reason for r in plan.refused}
    assert "Celery's own result cleanup" in reasons["celery.backend_cleanup"]
    assert "options['priority']=5: no priorities here" in "\n".join(plan.lines())
    importers.write(plan, paused=False)
    imported_schedule = Schedule.objects.get(name="until-new-year")
    assert (imported_schedule.interval, imported_schedule.end_at) == (timedelta(hours=1), ends)


def test_a_pattern_covers_app_task_proxies_by_the_module_that_defines_them():
    """``@app.task`` before the app is finalized leaves a lazy proxy (``celery.local``) in the
    module: ``tests.peers.tasks.*`` alone allows it, as it allows ``@shared_task`` tasks."""
    from django_cadence.executors.allow_list import resolve

    assert type(tasks.bound_export).__module__ == "celery.local"
    assert "tests.peers.tasks.bound_export" not in settings_module.CADENCE_EXECUTORS
    tasks.calls.clear()
    resolve("tests.peers.tasks.bound_export")(table="orders")
    resolve("tests.peers.tasks.renamed")(day="mon")
    assert [name for name, _ in tasks.calls] == ["bound_export", "renamed"]


@pytest.mark.parametrize("name", ["bound_export", "send_report"])
def test_a_celery_task_imported_into_an_allowed_module_is_refused(name, settings):
    """The pattern of the module that imports a task does not allow it: only its own does."""
    from django_cadence.exceptions import ExecutorNotAllowed
    from django_cadence.executors.allow_list import resolve

    settings.CADENCE_EXECUTORS = ["tests.peers.reexports.*"]
    with pytest.raises(ExecutorNotAllowed, match=r"defined in 'tests\.peers\.tasks'"):
        resolve(f"tests.peers.reexports.{name}")


def test_a_queue_name_cadence_cannot_use_is_a_note_and_the_default_queue():
    interval = IntervalSchedule.objects.create(every=90, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name="odd", task="tests.peers.tasks.ping", interval=interval, queue="slow lane"
    )
    plan = importers.plan("celery-beat")
    text = "\n".join(plan.lines())
    assert "queue='slow lane': not kept as the queue: a queue name starts with" in text
    importers.write(plan, paused=False)
    assert Schedule.objects.get(name="odd").queue == "default"
