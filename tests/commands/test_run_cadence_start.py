"""``run_cadence`` at start: it applies the schedules declared in code and logs how many may
fire, in a real process (the engine leaves both to the command that runs it)."""

import subprocess
from pathlib import Path

import pytest

from benchmarks.fleet import child_env, database_env, run_cadence_args
from django_cadence.models import Schedule

# The child writes through its own connection.
pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
DECLARED = {"declared": {"interval": 3600, "executor": "tests.jobs.noop"}}


def run_once(overrides):
    return subprocess.run(
        run_cadence_args("tests.settings", "w-start", once=True),
        cwd=ROOT,
        env=child_env(database_env(), overrides),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_run_cadence_applies_the_declared_schedules_and_logs_the_summary():
    result = run_once({"CADENCE_SCHEDULES": DECLARED})
    assert result.returncode == 0, result.stderr
    assert Schedule.objects.get(name="declared").code_owned
    assert "schedules from code reconciled" in result.stderr
    assert "1 schedule(s) enabled; the next is due at " in result.stderr


def test_run_cadence_leaves_them_when_reconcile_on_start_is_off():
    result = run_once({"CADENCE_SCHEDULES": DECLARED, "CADENCE_RECONCILE_ON_START": False})
    assert result.returncode == 0, result.stderr
    assert not Schedule.objects.exists()
    assert "0 schedule(s) enabled; none is due" in result.stderr
