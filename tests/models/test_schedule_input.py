"""Whatever is given to a schedule, a mistake is a ValidationError naming the field.

Durations take a ``timedelta``, a number of seconds or a string such as ``"00:05:00"``, as
``CADENCE_SCHEDULES`` does; nothing is written when a field is wrong.
"""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from django_cadence.models import Schedule


def create(**fields):
    values = {"name": "poll", "kind": "interval", "interval": 30, "executor": "tests.jobs.noop"}
    values.update(fields)
    return Schedule.objects.create(**values)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (30, timedelta(seconds=30)),
        (1.5 * 60, timedelta(seconds=90)),
        ("00:05:00", timedelta(minutes=5)),
    ],
)
def test_an_interval_takes_seconds_or_a_duration_string(db, given, expected):
    assert create(interval=given).interval == expected


def test_every_duration_field_takes_seconds(db):
    schedule = create(jitter=5, retry_base=10, retry_cap=600, max_runtime=60, misfire_grace=30)
    schedule.refresh_from_db()
    assert schedule.jitter == timedelta(seconds=5)
    assert schedule.retry_cap == timedelta(minutes=10)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("interval", [30], "number of seconds"),
        ("interval", "soon", "number of seconds"),
        ("jitter", object(), "number of seconds"),
        ("max_runtime", "ten", "number of seconds"),
        ("kind", "weekly", "choose one of cron, interval, once"),
        ("overlap", "sometimes", "choose one of allow, skip_if_running"),
        ("misfire", "never", "choose one of skip, fire_once, fire_all"),
        ("max_attempts", "x", "whole number"),
        ("max_occurrences", "many", "whole number"),
        ("pause_after_failures", -1, "at least 1"),
        ("start_at", "nope", "aware datetime"),
        ("enabled", "maybe", "True or False"),
        ("timezone", 5, "Unknown time zone"),
        ("executor", None, "required"),
        ("name", "", "not blank"),
        ("name", "   ", "not blank"),
    ],
)
def test_a_wrong_value_is_a_validation_error_naming_the_field_and_nothing_is_written(
    db, field, value, words
):
    with pytest.raises(ValidationError) as refused:
        create(**{field: value})

    assert field in refused.value.message_dict
    assert len(refused.value.message_dict[field]) == 1  # one reason, not its echoes
    assert any(words in message for message in refused.value.message_dict[field])
    assert not Schedule.objects.exists()


def test_a_duplicate_name_is_a_validation_error_on_name(db):
    create()
    with pytest.raises(ValidationError) as refused:
        create()

    assert "already exists" in refused.value.message_dict["name"][0]
    assert Schedule.objects.count() == 1


def test_an_interval_schedule_without_an_interval_says_so_in_english(db):
    with pytest.raises(ValidationError) as refused:
        create(interval=None)

    assert refused.value.message_dict["interval"] == [
        "An interval schedule needs a value for interval."
    ]


def test_an_ambiguous_minutes_seconds_interval_is_refused_naming_the_field(db):
    with pytest.raises(ValidationError) as excinfo:
        create(interval="00:05")
    message = " ".join(excinfo.value.message_dict["interval"])
    assert message.startswith("interval '00:05' is ambiguous")
    assert "'5 minutes' or '0:05:00'" in message
    assert not Schedule.objects.exists()


def test_an_interval_in_words_is_read(db):
    assert create(interval="5 minutes").interval == timedelta(minutes=5)


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"interval": timedelta(minutes=5)}, "interval"),
        ({"interval": "5 minutes"}, "interval"),
        ({"cron": "@daily"}, "cron"),
        ({"run_at": "2030-01-01T00:00:00Z"}, "once"),
    ],
)
def test_the_kind_is_inferred_from_the_one_spec_field_given(db, fields, kind):
    schedule = Schedule.objects.create(name="inferred", executor="tests.jobs.noop", **fields)
    schedule.refresh_from_db()
    assert schedule.kind == kind


def test_a_kind_given_is_kept_and_the_error_says_which_kind_to_set(db):
    with pytest.raises(ValidationError) as excinfo:
        Schedule.objects.create(
            name="cron-by-mistake", kind="cron", interval=timedelta(minutes=5), executor="x.y"
        )
    errors = excinfo.value.message_dict
    assert (
        "A cron schedule needs a value for cron. For an interval schedule, set kind='interval'."
        in (errors["cron"])
    )


def test_two_spec_fields_without_a_kind_are_not_guessed(db):
    with pytest.raises(ValidationError) as excinfo:
        Schedule.objects.create(
            name="both", interval=60, run_at="2030-01-01T00:00:00Z", executor="tests.jobs.noop"
        )
    assert excinfo.value.message_dict == {
        "kind": [
            (
                "Give only one of cron, interval or run_at (which sets the kind), not interval "
                "and run_at."
            )
        ]
    }


def test_no_spec_field_and_no_kind_says_what_sets_the_kind(db):
    with pytest.raises(ValidationError) as excinfo:
        Schedule(name="bare", executor="tests.jobs.noop").full_clean()
    assert excinfo.value.message_dict == {
        "kind": ["A schedule needs one of cron, interval or run_at, which also sets its kind."]
    }


def test_a_spec_field_set_after_construction_still_implies_the_kind(db):
    schedule = Schedule(name="later", executor="tests.jobs.noop")
    schedule.interval = 60
    schedule.save()
    assert schedule.kind == "interval"
    assert schedule.interval == timedelta(minutes=1)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("interval", 60),
        ("interval", 1.5),
        ("interval", "5 minutes"),
        ("jitter", 5),
        ("retry_base", "10s"),
        ("max_silence", 3600),
    ],
)
def test_full_clean_takes_the_durations_the_docs_promise(db, field, value):
    """``full_clean()`` runs Django's field checks before the model's own: a number of
    seconds must not reach Django's duration check, which raises TypeError on it."""
    fields = {"name": "seconds", "interval": 60, "executor": "tests.jobs.noop", field: value}
    schedule = Schedule(**fields)
    schedule.full_clean()
    assert isinstance(getattr(schedule, field), timedelta)
