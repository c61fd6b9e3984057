"""Declared schedules become validated, unsaved schedules, without touching the database."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_cadence.conf import cadence_settings
from django_cadence.ops import declarations
from django_cadence.ops.declarations import Declaration, DeclarationError, build


def declared(**fields):
    return build(Declaration("s", "CADENCE_SCHEDULES['s']", fields))


def errors(**fields):
    with pytest.raises(DeclarationError) as excinfo:
        declared(**fields)
    assert str(excinfo.value).startswith("schedule 's' (CADENCE_SCHEDULES['s']): ")
    return excinfo.value.errors


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"cron": "@daily"}, "cron"),
        ({"interval": 30}, "interval"),
        ({"run_at": "2026-01-01T00:00:00+01:00"}, "once"),
    ],
)
def test_declarations_kind_is_inferred(fields, kind):
    assert declared(executor="tests.jobs.noop", **fields).kind == kind


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (90, timedelta(seconds=90)),
        (1.5, timedelta(seconds=1.5)),
        ("00:05:00", timedelta(minutes=5)),
        ("P1D", timedelta(days=1)),
        (timedelta(hours=2), timedelta(hours=2)),
    ],
)
def test_declarations_durations(value, expected):
    assert declared(executor="tests.jobs.noop", interval=value).interval == expected


def test_declarations_instants_must_be_aware():
    schedule = declared(executor="tests.jobs.noop", run_at="2026-01-01T00:00:00Z")
    assert schedule.run_at == datetime(2026, 1, 1, tzinfo=UTC)
    found = errors(executor="tests.jobs.noop", run_at="2026-01-01T00:00:00")
    assert "must include a time zone" in found["run_at"][0]
    found = errors(executor="tests.jobs.noop", cron="@daily", start_at="soon")
    assert "ISO 8601" in found["start_at"][0]


def test_declarations_kind_errors():
    assert errors(executor="tests.jobs.noop") == {
        "kind": ["A schedule needs one of cron, interval or run_at, which also sets its kind."]
    }
    found = errors(executor="tests.jobs.noop", cron="@daily", interval=60)
    assert found == {
        "kind": [
            (
                "Give only one of cron, interval or run_at (which sets the kind), not cron and "
                "interval."
            )
        ]
    }


def test_declarations_error_is_one_sentence_per_field():
    with pytest.raises(DeclarationError) as excinfo:
        declared(executor="tests.jobs.noop", interval=0.5, overlap="sometimes", retry_base=-1)
    assert str(excinfo.value) == (
        "schedule 's' (CADENCE_SCHEDULES['s']): interval: The interval must be at least 1 s "
        "(CADENCE_MIN_INTERVAL). overlap: Unknown overlap 'sometimes': choose one of allow, "
        "skip_if_running, queue, buffer_one, replace. retry_base: retry_base must be a "
        "positive duration."
    )


def test_declarations_every_bad_field_is_named():
    found = errors(
        cron="0 0 30 2 *",
        executor="os.system",
        overlap="sometimes",
        interval_seconds=5,
        jitter="soon",
    )
    assert set(found) >= {"cron", "executor", "overlap", "interval_seconds", "jitter"}
    assert "unknown field" in found["interval_seconds"][0]


def test_declarations_task_shortcut_builds_the_tasks_executor(settings):
    settings.CADENCE_TASKS = ["tests.tasks.*"]
    schedule = declared(cron="@hourly", task="tests.tasks.double", args=[2])
    assert schedule.executor == "django_cadence.tasks.enqueue"
    assert schedule.payload == {"task": "tests.tasks.double", "args": [2]}
    assert "only accepted together with task" in errors(cron="@hourly", args=[1])["args"][0]


def test_declarations_code_owned_fields_leave_enabled_to_the_operator():
    assert "enabled" not in declarations.CODE_OWNED_FIELDS
    assert "enabled" in errors(cron="@daily", executor="tests.jobs.noop", enabled=False)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (["x"], "must be a dict of schedule name"),
        ({"": {}}, "non-empty schedule names"),
        ({"x": "*/5 * * * *"}, "must be a dict of fields"),
    ],
)
def test_declarations_setting_outline_is_checked_by_conf(value, fragment):
    with (
        override_settings(CADENCE_SCHEDULES=value),
        pytest.raises(ImproperlyConfigured, match="CADENCE_SCHEDULES") as excinfo,
    ):
        cadence_settings.SCHEDULES  # noqa: B018 - reading it validates it
    assert fragment in str(excinfo.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CADENCE_METRICS", "yes"),
        ("CADENCE_RECONCILE_ON_START", 1),
        ("CADENCE_METRICS_PORT", 70000),
        ("CADENCE_TASKS", "tests.tasks.*"),
    ],
)
def test_declarations_new_settings_reject_bad_values(name, value):
    with override_settings(**{name: value}), pytest.raises(ImproperlyConfigured, match=name):
        getattr(cadence_settings, name.removeprefix("CADENCE_"))
