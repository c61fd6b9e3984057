"""Every bad input is refused with a message on its own field, and nothing is written."""

from datetime import UTC, datetime, timedelta

import pytest
from django import forms
from django.core.exceptions import ValidationError
from django.test import override_settings

from django_cadence.models import Schedule

T0 = datetime(2026, 1, 1, tzinfo=UTC)

VALID = {
    "name": "valid",
    "kind": "interval",
    "interval": timedelta(minutes=5),
    "executor": "tests.jobs.noop",
    "payload": {},
}

BAD_INPUTS = [
    ("unparseable-cron", {"kind": "cron", "cron": "every tuesday", "interval": None}, "cron"),
    ("cron-too-many-fields", {"kind": "cron", "cron": "0 0 * * * *", "interval": None}, "cron"),
    ("cron-out-of-range", {"kind": "cron", "cron": "61 * * * *", "interval": None}, "cron"),
    ("cron-never-fires", {"kind": "cron", "cron": "0 0 30 2 *", "interval": None}, "cron"),
    ("unknown-time-zone", {"timezone": "Mars/Olympus_Mons"}, "timezone"),
    ("empty-time-zone", {"timezone": ""}, "timezone"),
    ("interval-below-minimum", {"interval": timedelta(milliseconds=500)}, "interval"),
    ("interval-negative", {"interval": timedelta(seconds=-10)}, "interval"),
    ("cron-kind-without-cron", {"kind": "cron", "interval": None}, "cron"),
    ("cron-kind-with-interval", {"kind": "cron", "cron": "* * * * *"}, "interval"),
    ("interval-kind-without-interval", {"interval": None}, "interval"),
    ("interval-kind-with-run-at", {"run_at": T0}, "run_at"),
    ("once-kind-without-run-at", {"kind": "once", "interval": None}, "run_at"),
    (
        "once-kind-with-cron",
        {"kind": "once", "interval": None, "run_at": T0, "cron": "* * * * *"},
        "cron",
    ),
    ("end-before-start", {"start_at": T0, "end_at": T0 - timedelta(hours=1)}, "end_at"),
    ("end-equals-start", {"start_at": T0, "end_at": T0}, "end_at"),
    ("payload-list", {"payload": [1, 2]}, "payload"),
    ("payload-string", {"payload": "hello"}, "payload"),
    (
        "payload-too-large",
        {"executor": "tests.jobs.echo", "payload": {"x": "y" * 70_000}},
        "payload",
    ),
    (
        "payload-not-json",
        {"executor": "tests.jobs.echo", "payload": {"x": float("nan")}},
        "payload",
    ),
    (
        "payload-does-not-fit-signature",
        {"executor": "tests.jobs.add", "payload": {"a": 1}},
        "payload",
    ),
    ("executor-outside-allow-list", {"executor": "os.system"}, "executor"),
    ("executor-builtin-eval", {"executor": "builtins.eval"}, "executor"),
    ("executor-with-spaces", {"executor": "tests.jobs.no op"}, "executor"),
    ("executor-missing", {"executor": "tests.jobs.does_not_exist"}, "executor"),
    ("negative-jitter", {"jitter": timedelta(seconds=-1)}, "jitter"),
    ("zero-retry-base", {"retry_base": timedelta(0)}, "retry_base"),
]


def build(**overrides):
    fields = {**VALID, **overrides}
    return Schedule(**fields)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field"),
    [(o, f) for _, o, f in BAD_INPUTS],
    ids=[case for case, _, _ in BAD_INPUTS],
)
def test_validation_full_clean_names_the_field(overrides, field):
    schedule = build(**overrides)
    with pytest.raises(ValidationError) as excinfo:
        schedule.full_clean()
    assert field in excinfo.value.message_dict
    assert all(message.strip() for message in excinfo.value.message_dict[field])
    assert Schedule.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field"),
    [(o, f) for _, o, f in BAD_INPUTS],
    ids=[case for case, _, _ in BAD_INPUTS],
)
def test_validation_create_refuses_and_writes_nothing(overrides, field):
    with pytest.raises(ValidationError) as excinfo:
        Schedule.objects.create(**{**VALID, **overrides})
    assert field in excinfo.value.message_dict
    assert Schedule.objects.count() == 0


@pytest.mark.django_db
def test_validation_reports_every_bad_field_at_once():
    schedule = build(timezone="Nowhere/Land", executor="os.system", payload=[1])
    with pytest.raises(ValidationError) as excinfo:
        schedule.full_clean()
    assert {"timezone", "executor", "payload"} <= set(excinfo.value.message_dict)


@pytest.mark.django_db
def test_validation_never_fires_message_says_why():
    schedule = build(kind="cron", cron="0 0 30 2 *", interval=None)
    with pytest.raises(ValidationError) as excinfo:
        schedule.full_clean()
    assert "never" in " ".join(excinfo.value.message_dict["cron"]).lower()


@pytest.mark.django_db
def test_validation_interval_minimum_names_the_setting():
    with override_settings(CADENCE_MIN_INTERVAL=60):
        schedule = build(interval=timedelta(seconds=30))
        with pytest.raises(ValidationError) as excinfo:
            schedule.full_clean()
    assert "CADENCE_MIN_INTERVAL" in excinfo.value.message_dict["interval"][0]


@pytest.mark.django_db
def test_validation_executor_outside_allow_list_is_never_imported(tmp_path, monkeypatch):
    import sys

    (tmp_path / "cadence_trap.py").write_text("raise SystemExit('imported!')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    schedule = build(executor="cadence_trap.run")
    with pytest.raises(ValidationError) as excinfo:
        schedule.full_clean()
    assert "executor" in excinfo.value.message_dict
    assert "cadence_trap" not in sys.modules


class ScheduleForm(forms.ModelForm):
    class Meta:
        model = Schedule
        fields = (
            "name",
            "kind",
            "cron",
            "interval",
            "run_at",
            "timezone",
            "executor",
            "payload",
            "overlap",
            "misfire",
            "jitter",
            "start_at",
            "end_at",
        )


@pytest.mark.django_db
def test_validation_model_form_refuses_and_saves_nothing():
    form = ScheduleForm(
        data={
            "name": "from-form",
            "kind": "cron",
            "cron": "0 0 30 2 *",
            "timezone": "UTC",
            "executor": "os.system",
            "payload": '{"a": 1}',
            "overlap": "allow",
            "misfire": "skip",
            "jitter": "0",
        }
    )
    assert not form.is_valid()
    assert {"cron", "executor"} <= set(form.errors)
    assert Schedule.objects.count() == 0


@pytest.mark.django_db
def test_validation_model_form_saves_a_valid_schedule():
    form = ScheduleForm(
        data={
            "name": "from-form",
            "kind": "cron",
            "cron": "*/5 * * * *",
            "timezone": "Europe/Dublin",
            "executor": "tests.jobs.noop",
            "payload": "{}",
            "overlap": "allow",
            "misfire": "skip",
            "jitter": "0",
        }
    )
    assert form.is_valid(), form.errors
    schedule = form.save()
    assert schedule.next_run_at is not None
