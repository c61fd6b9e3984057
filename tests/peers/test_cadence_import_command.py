"""``manage.py cadence_import`` as a user runs it, in a subprocess against a project's settings."""

import pytest

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
    assert "options['queue']='slow'" in dry.stdout
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
