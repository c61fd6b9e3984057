"""``cadence_sync`` as a deploy runs it: a subprocess against the project's settings."""

import json

import pytest

from benchmarks.fleet import OVERRIDES_ENV, database_env
from django_cadence import services
from django_cadence.models import Schedule
from tests.support.commands import run_django

pytestmark = pytest.mark.django_db(transaction=True)

NIGHTLY = {"cron": "0 3 * * *", "executor": "tests.jobs.echo"}


def cadence_sync(*args, schedules):
    env = {**database_env(), OVERRIDES_ENV: json.dumps({"CADENCE_SCHEDULES": schedules})}
    result = run_django("cadence_sync", "--settings=tests.settings", *args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_cadence_sync_dry_run_says_what_it_would_do_in_the_conditional():
    cadence_sync(schedules={"nightly": NIGHTLY, "old": {**NIGHTLY, "cron": "@daily"}})
    services.pause("old", "investigating")
    Schedule.objects.filter(name="old").update(code_owned=False)  # made in the admin
    declared = {
        "nightly": {**NIGHTLY, "cron": "0 4 * * *"},
        "old": {**NIGHTLY, "cron": "@daily"},
        "new": {**NIGHTLY, "cron": "@hourly", "start_paused": "not before Monday"},
    }
    assert cadence_sync("--dry-run", schedules=declared) == [
        "+ would create new (cron '@hourly', tests.jobs.echo; paused: not before Monday)",
        "~ would update nightly cron: '0 3 * * *' -> '0 4 * * *'",
        "~ would adopt old: made outside code, now owned by code",
        "dry run: 1 would be created, 2 would be updated, 0 would be disabled, 0 unchanged",
    ]
    assert cadence_sync("--dry-run", schedules={}) == [
        "- would disable nightly: no longer declared in code",
        "dry run: 0 would be created, 0 would be updated, 1 would be disabled, 0 unchanged",
    ]
    assert not Schedule.objects.filter(name="new").exists()
    assert cadence_sync(schedules=declared)[0] == (
        "+ created new (cron '@hourly', tests.jobs.echo; paused: not before Monday)"
    )


def test_cadence_sync_start_paused_pauses_only_the_schedule_it_creates():
    declared = {"nightly": {**NIGHTLY, "start_paused": True}}
    cadence_sync(schedules=declared)
    nightly = Schedule.objects.get(name="nightly")
    assert not nightly.enabled
    assert nightly.pause_reason == (
        "start_paused in CADENCE_SCHEDULES['nightly']: resume it when it should run"
    )
    services.resume("nightly")
    assert cadence_sync(schedules=declared) == ["0 created, 0 updated, 0 disabled, 1 unchanged"]
    assert Schedule.objects.get(name="nightly").enabled
