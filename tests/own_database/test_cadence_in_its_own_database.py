"""Cadence routed to a database of its own (``cadence``): every query goes there.

The router (``tests/own_database/router.py``) migrates django_cadence into ``cadence`` only,
so the default database has no Cadence table: a query sent there by mistake fails. Each test
also watches the default connection and fails on any statement naming a Cadence table, since
the engine, the clock and the admin's banner survive a failing query by design.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connections
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from django_cadence import services, store
from django_cadence.engine import leases, planner
from django_cadence.engine.loop import Engine
from django_cadence.models import Attempt, Lock, Schedule, Worker
from tests.own_database import jobs

pytestmark = pytest.mark.django_db(databases=["default", "cadence"], transaction=True)

ROOT = Path(__file__).resolve().parents[2]
MINUTE = timedelta(minutes=1)
CADENCE_TABLES = [model._meta.db_table for model in (Schedule, Attempt, Worker, Lock)]


@pytest.fixture(autouse=True)
def default_untouched():
    """Fail on any statement of the default connection that names a Cadence table."""
    strays: list[str] = []

    def watch(execute, sql, params, many, context):
        if "django_cadence" in str(sql):
            strays.append(str(sql))
        return execute(sql, params, many, context)

    with connections["default"].execute_wrapper(watch):
        yield
    assert strays == []
    for table in CADENCE_TABLES:
        assert table not in connections["default"].introspection.table_names()
        assert table in connections["cadence"].introspection.table_names()


def make_schedule(name, **fields):
    defaults = {"kind": "interval", "interval": MINUTE, "executor": "tests.jobs.noop"}
    return Schedule.objects.create(name=name, **{**defaults, **fields})


def test_cadence_lives_where_the_router_sends_it_and_nowhere_else():
    assert store.alias() == "cadence"
    assert Engine(using="cadence").using == "cadence"
    with pytest.raises(ImproperlyConfigured, match=r"'cadence'.*not in 'default'"):
        Engine(using="default")
    assert [m for m in checks.run_checks() if m.id == "django_cadence.E004"] == []


class ReadsElsewhere:
    """A router that reads Cadence from one alias and writes it to another."""

    def db_for_read(self, model, **hints):
        return "default" if model._meta.app_label == "django_cadence" else None

    def db_for_write(self, model, **hints):
        return "cadence" if model._meta.app_label == "django_cadence" else None


def test_a_router_that_splits_cadence_over_two_databases_is_an_error():
    with override_settings(
        DATABASE_ROUTERS=[f"{__name__}.ReadsElsewhere", "tests.own_database.router.CadenceRouter"]
    ):
        (error,) = [m for m in checks.run_checks() if m.id == "django_cadence.E004"]
    assert "Cadence lives in the database 'cadence'" in error.msg
    assert "Attempt is read from 'default'" in error.msg


def test_an_engine_plans_claims_runs_retries_renews_and_recovers_in_its_database(clock, settings):
    settings.CADENCE_LEASE = 30
    settings.CADENCE_RECOVERY_GRACE = 5
    engine = Engine(clock=clock, worker_id="w-own", inline=True, concurrency=4)
    ok = make_schedule("ok", created_at=clock.now())
    flaky = make_schedule(
        "flaky",
        created_at=clock.now(),
        executor="tests.jobs.fail_n_times",
        payload={"n": 1, "key": "own"},
        max_attempts=3,
        retry_base=timedelta(seconds=10),
        retry_cap=timedelta(seconds=10),
    )

    atomic = make_schedule(
        "atomic", executor=f"{jobs.__name__}.where_atomic_runs", created_at=clock.now()
    )

    clock.advance(MINUTE)
    engine.tick()  # plans all three, claims them, runs them: one fails
    assert Attempt.objects.get(schedule=ok).status == "succeeded"
    done = Attempt.objects.get(schedule=atomic)
    assert (done.status, done.outcome) == ("succeeded", {"default": False, "cadence": True})
    failed = Attempt.objects.get(schedule=flaky)
    assert (failed.status, failed.tries) == ("pending", 1)

    clock.set(failed.retry_at)
    engine.tick()  # the retry runs and succeeds
    failed.refresh_from_db()
    assert (failed.status, failed.tries) == ("succeeded", 2)

    # Another worker claims the next occurrence and renews its lease, then is lost.
    clock.advance(MINUTE)
    planner.plan_due(clock.now())
    (claim,) = leases.claim(clock.now(), worker="w-gone", slots=1)
    later = clock.advance(seconds=20)
    assert leases.renew([claim], later, worker="w-gone") == leases.Renewal(set(), set())
    lost = Attempt.objects.get(claim_token=claim.token)
    assert lost.lease_until == later + timedelta(seconds=30)

    clock.advance(seconds=36)  # its lease and the grace are over: this engine recovers it
    for _ in range(3):
        engine.tick()
    lost.refresh_from_db()
    assert lost.status == "succeeded"
    assert lost.recoveries == 1
    assert [entry["result"] for entry in lost.history][:1] == ["lost"]


def test_services_and_the_admin_write_to_cadences_database(clock):
    schedule = make_schedule(
        "manual", executor="tests.jobs.raise_permanent", created_at=clock.now()
    )
    services.pause(schedule, "for a test")
    attempt = services.trigger(schedule, even_if_paused=True, now=clock.now())
    engine = Engine(clock=clock, worker_id="w-own", inline=True)
    engine.tick()
    attempt.refresh_from_db()
    assert attempt.status == "dead_letter"
    assert services.retry(attempt, now=clock.now()).status == "pending"
    assert services.cancel(attempt, now=clock.now()).status == "cancelled"
    services.resume(schedule)

    user = get_user_model().objects.create_superuser("admin", "admin@example.com", "pw")
    client = Client()
    client.force_login(user)
    assert client.get(reverse("admin:django_cadence_schedule_changelist")).status_code == 200
    assert client.get(reverse("admin:django_cadence_attempt_changelist")).status_code == 200
    pause = reverse("admin:django_cadence_schedule_do", args=[schedule.pk, "pause"])
    assert client.post(pause).status_code == 302
    schedule.refresh_from_db()
    assert not schedule.enabled


def test_the_commands_read_and_write_cadences_database(clock):
    make_schedule("hourly", kind="cron", cron="0 * * * *", interval=None, overlap="allow")
    out = StringIO()
    call_command(
        "cadence_backfill",
        "hourly",
        "--from",
        "2026-01-05T00:00:00Z",
        "--to",
        "2026-01-05T02:00:00Z",
        stdout=out,
    )
    assert Attempt.objects.filter(schedule__name="hourly").count() == 3
    call_command("cadence_status", stdout=out)
    assert "hourly" in out.getvalue()
    call_command("cadence_sync", stdout=out)
    call_command("cadence_prune", "--older-than", "1d", "--dry-run", stdout=out)
    with pytest.raises(CommandError, match="lives in the database 'cadence'"):
        call_command("cadence_import", "celery-beat", "--database", "default", stdout=out)


@pytest.mark.process
def test_run_cadence_and_check_in_a_process_use_cadences_database():
    """``manage.py run_cadence --once`` and ``manage.py check`` with the router's settings."""
    schedule = make_schedule("due", created_at=timezone.now() - timedelta(seconds=90))
    default = connections["default"].settings_dict
    name = {
        "sqlite": "CADENCE_SQLITE_NAME",
        "postgresql": "CADENCE_PG_NAME",
        "mysql": "CADENCE_MYSQL_NAME",
    }[connections["default"].vendor]
    env = {**os.environ, name: str(default["NAME"])}  # the test databases, both
    settings = "--settings=tests.own_database.settings"
    for command in (["check", "--fail-level", "WARNING"], ["run_cadence", "--once"]):
        result = subprocess.run(
            [sys.executable, "-m", "django", *command, settings],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    assert Attempt.objects.get(schedule=schedule).status == "succeeded"
    assert Worker.objects.filter(stopped_at__isnull=False).exists()
