"""``run_cadence`` at start: it applies the schedules declared in code and logs how many may
fire, in a real process (the engine leaves both to the command that runs it)."""

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from benchmarks.fleet import child_env, database_env, run_cadence_args
from django_cadence.models import Schedule
from django_cadence.store.base import Store
from django_cadence.store.sqlite import SQLiteStore
from tests.support.commands import run_django

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


def test_run_cadence_says_what_it_catches_up_after_a_stop(make_schedule):
    """Seven and a half minutes without an engine for a schedule every minute with a 4 min
    grace: the start-up log says the four on-time occurrences and the latest older one run,
    and three are missed. (Half a minute of margin either way for the child to start.)"""
    behind = make_schedule(
        name="behind", interval=timedelta(minutes=1), misfire_grace=timedelta(minutes=4)
    )
    first = timezone.now() - timedelta(seconds=450)
    Schedule.objects.filter(pk=behind.pk).update(
        created_at=first - timedelta(minutes=1), next_run_at=first
    )
    result = run_once({})
    assert result.returncode == 0, result.stderr
    assert (
        "catching up schedule=behind run=5 missed=3 skipped=0 since="
        f"{first.isoformat()}: 4 occurrence(s) within its misfire_grace (240 s) are on time; "
        "misfire=fire_once adds the latest of the 4 older one(s) and records 3 missed; the 5 "
        "run one after another (overlap=skip_if_running)"
    ) in result.stderr


def test_the_first_start_warns_of_nothing_overdue_that_it_has_not_run_yet(make_schedule):
    """A schedule made 70 s before the first engine, failing: the start plans and runs its
    on-time occurrences; none of them makes it overdue at once (its silence counts from
    then), in the engine's log or in ``cadence_status --check``."""
    early = make_schedule(
        name="early", interval=timedelta(seconds=15), executor="tests.jobs.raise_permanent"
    )
    made = timezone.now() - timedelta(seconds=70)
    Schedule.objects.filter(pk=early.pk).update(
        created_at=made, enabled_at=made, next_run_at=made + timedelta(seconds=15)
    )
    result = run_once({})
    assert result.returncode == 0, result.stderr
    assert "catching up schedule=early" in result.stderr
    assert "schedule overdue" not in result.stderr
    check = run_django(
        "cadence_status", "--check", "--settings=tests.settings", env=child_env(database_env())
    )
    assert "overdue:" not in check.stdout, check.stdout  # no overdue reason
    assert "overdue schedule" not in check.stdout


def test_the_help_names_the_default_concurrency_the_engine_uses():
    result = run_django("run_cadence", "--help", "--settings=tests.settings", env=child_env({}))
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert (
        f"default CADENCE_CONCURRENCY, else {Store.default_concurrency}, "
        f"or {SQLiteStore.default_concurrency} on SQLite" in text
    )
