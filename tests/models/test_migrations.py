"""The package's migrations end with the identity trigger (invariant 7, docs/design.md).

On SQLite a step that alters the attempts table rebuilds it and drops its triggers, so the
step installing the trigger must come after every step that touches that table, in whatever
migrations are added later.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations import operations
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from django_cadence.models import Schedule
from django_cadence.store import identity_guard

APP = "django_cadence"


def _steps_in_order():
    """(migration name, operation) of the app, in the order ``migrate`` applies them."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    (leaf,) = loader.graph.leaf_nodes(APP)
    return [
        (name, op)
        for app, name in loader.graph.forwards_plan(leaf)
        if app == APP
        for op in loader.graph.nodes[(app, name)].operations
    ]


def _touches_attempts(op):
    model = getattr(op, "model_name", None) or getattr(op, "name", "")
    return isinstance(op, operations.base.Operation) and str(model).lower() == "attempt"


def _installs_trigger(op):
    return isinstance(op, operations.RunPython) and op.code is identity_guard.install


def test_the_identity_trigger_is_installed_after_the_last_step_on_the_attempts_table():
    steps = _steps_in_order()
    last_on_attempts = max(i for i, (_, op) in enumerate(steps) if _touches_attempts(op))
    installs = [i for i, (_, op) in enumerate(steps) if _installs_trigger(op)]
    assert installs, "no migration installs the identity trigger"
    assert installs[-1] > last_on_attempts, (
        f"{steps[last_on_attempts][0]} alters the attempts table after the identity trigger "
        "is installed: call identity_guard.install again after it"
    )
    assert steps[installs[-1]][1].reverse_code is identity_guard.remove


@pytest.mark.django_db(transaction=True)
def test_a_process_from_before_the_notices_migration_can_still_add_a_schedule():
    """During a rolling upgrade, workers and web processes of the previous release run beside
    the migrated tables: their inserts name no ``notify`` column, so it needs a database
    default (docs/how-to/deploy.md, migrations while old workers run)."""
    old_apps = MigrationExecutor(connection).loader.project_state((APP, "0001_initial")).apps
    old_schedule = old_apps.get_model(APP, "Schedule")
    assert "notify" not in {field.name for field in old_schedule._meta.fields}
    old_schedule.objects.create(
        name="from-the-old-release",
        kind="interval",
        interval=timedelta(minutes=5),
        executor="tests.jobs.noop",
    )
    assert Schedule.objects.get(name="from-the-old-release").notify == ""
