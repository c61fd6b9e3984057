"""``manage.py cadence_import`` as a user runs it, in a subprocess against a project's settings."""

import pytest
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from benchmarks.fleet import database_env
from django_cadence.models import Schedule
from tests.support.commands import run_django

pytestmark = pytest.mark.django_db(transaction=True)


def cadence_import(*args):
    env = {**database_env(), "DJANGO_SETTINGS_MODULE": "tests.peers.settings"}
    return run_django("cadence_import", *args, env=env)


def test_command_dry_run_then_write_then_again():
    dry = cadence_import("celery-beat")
    assert dry.returncode == 0, dry.stderr
    assert (
        "+ weekday-report (cron '0 */3 * * mon-fri', tests.peers.tasks.send_report)" in dry.stdout
    )
    assert "    timezone = 'Europe/Paris'" in dry.stdout
    assert "    the source's own next 10 firings are the same." in dry.stdout
    assert "    queue = 'slow'" in dry.stdout
    assert "run_cadence --queues slow" in dry.stdout
    assert "3 to create" in dry.stdout
    assert "dry run: nothing written" in dry.stdout
    assert Schedule.objects.count() == 0

    written = cadence_import("celery-beat", "--write", "--paused")
    assert written.returncode == 0, written.stderr
    assert "celery-beat: 3 created" in written.stdout
    assert set(Schedule.objects.values_list("enabled", flat=True)) == {False}

    again = cadence_import("celery-beat", "--write")
    assert "= weekday-report: already imported, unchanged" in again.stdout
    assert "0 created, 3 already imported" in again.stdout
    assert Schedule.objects.count() == 3


def test_command_settings_block_and_a_source_not_installed():
    block = cadence_import("celery-beat", "--settings-block")
    assert block.returncode == 0, block.stderr
    assert "CADENCE_SCHEDULES = {" in block.stdout
    compile(block.stdout, "settings.py", "exec")
    env_ok = cadence_import("django-q")
    assert env_ok.returncode == 0, env_ok.stderr
    assert "django-q: 0 to create" in env_ok.stdout


def test_pasted_settings_block_keeps_beats_pause_and_the_schedules_above_it(tmp_path):
    """The block pasted below a project's CADENCE_SCHEDULES, then ``cadence_sync``: the
    schedules declared there stay, beat's disabled task is created paused, and a schedule the
    operator resumes stays resumed at the next deploy."""
    hourly = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    PeriodicTask.objects.create(
        name="dormant", task="tests.peers.tasks.ping", interval=hourly, enabled=False
    )
    block = cadence_import("celery-beat", "--settings-block")
    assert block.returncode == 0, block.stderr
    assert "    'start_paused': 'disabled in django-celery-beat',\n" in block.stdout
    (tmp_path / "pasted_settings.py").write_text(
        "from tests.peers.settings import *  # noqa: F403\n"
        "CADENCE_SCHEDULES = {'mine': {'interval': 60, 'executor': 'tests.jobs.noop'}}\n"
        f"{block.stdout}"
    )
    env = {**database_env(), "DJANGO_SETTINGS_MODULE": "pasted_settings"}
    env["PYTHONPATH"] = str(tmp_path)
    synced = run_django("cadence_sync", env=env)
    assert synced.returncode == 0, synced.stderr
    assert "5 created" in synced.stdout
    rows = {s.name: (s.enabled, s.pause_reason) for s in Schedule.objects.all()}
    assert rows["mine"] == (True, "")
    assert rows["dormant"] == (False, "disabled in django-celery-beat")
    assert rows["weekday-report"] == (True, "")

    Schedule.objects.filter(name="dormant").update(enabled=True, pause_reason="")  # resumed
    again = run_django("cadence_sync", env=env)
    assert "0 created, 0 updated, 0 disabled, 5 unchanged" in again.stdout
    assert Schedule.objects.get(name="dormant").enabled
