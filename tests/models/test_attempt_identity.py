"""An attempt's identity (schedule, occurrence, trigger) cannot change once written.

docs/design.md, invariants 1 and 7: one attempt per occurrence, and its identity fixed by
every path (a model save refuses with a message per field; the database refuses the rest).
Moving a row to another occurrence would let two rows describe one occurrence's fate, or none.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def attempt(make_schedule):
    schedule = make_schedule(interval=timedelta(minutes=1))
    return Attempt.objects.create(schedule=schedule, occurrence_at=T0, retry_at=T0)


@pytest.mark.parametrize(
    ("field", "value"),
    [("occurrence_at", T0 + timedelta(minutes=1)), ("trigger", "manual")],
)
def test_changing_the_occurrence_or_trigger_of_a_written_attempt_is_refused(attempt, field, value):
    loaded = Attempt.objects.get(pk=attempt.pk)
    setattr(loaded, field, value)
    with pytest.raises(ValidationError) as refused:
        loaded.save()
    assert field in refused.value.message_dict
    assert "identity" in refused.value.message_dict[field][0]
    assert getattr(Attempt.objects.get(pk=attempt.pk), field) == getattr(attempt, field)


def test_moving_a_written_attempt_to_another_schedule_is_refused(attempt, make_schedule):
    other = make_schedule(name="other", interval=timedelta(minutes=1))
    loaded = Attempt.objects.get(pk=attempt.pk)
    loaded.schedule = other
    with pytest.raises(ValidationError) as refused:
        loaded.save()
    assert "schedule" in refused.value.message_dict
    assert Attempt.objects.get(pk=attempt.pk).schedule_id == attempt.schedule_id


def test_the_instance_that_created_the_row_cannot_change_it_either(attempt):
    attempt.occurrence_at = T0 + timedelta(hours=1)
    with pytest.raises(ValidationError):
        attempt.save()


def test_other_fields_still_save(attempt):
    loaded = Attempt.objects.get(pk=attempt.pk)
    loaded.error = "a note"
    loaded.save()
    assert Attempt.objects.get(pk=attempt.pk).error == "a note"


# Every other path reaches the database, whose trigger refuses the change (invariant 7).

CHANGES = [
    ("occurrence_at", "occurrence_at", T0 + timedelta(minutes=1)),
    ("trigger", "trigger", "manual"),
    ("schedule_id", "schedule", None),  # None: another schedule, made by the test
]


@pytest.fixture(params=CHANGES, ids=[c[0] for c in CHANGES])
def change(request, make_schedule):
    """(column, field, new value) of one identity field."""
    column, field, value = request.param
    if value is None:
        value = make_schedule(name="other", interval=timedelta(minutes=1))
    return column, field, value


def _raw_value(field, value):
    return value.pk if field == "schedule" else value


def _through_deferred_save(attempt, field, value):
    loaded = Attempt.objects.only("id", "status").get(pk=attempt.pk)
    setattr(loaded, field, value)
    loaded.save()


def _through_update(attempt, field, value):
    Attempt.objects.filter(pk=attempt.pk).update(**{field: value})


def _through_bulk_update(attempt, field, value):
    loaded = Attempt.objects.get(pk=attempt.pk)
    loaded.__dict__[Attempt._meta.get_field(field).attname] = _raw_value(field, value)
    Attempt.objects.bulk_update([loaded], [field])


def _through_new_instance(attempt, field, value):
    fresh = Attempt(
        pk=attempt.pk,
        schedule=attempt.schedule,
        occurrence_at=attempt.occurrence_at,
        trigger=attempt.trigger,
        retry_at=attempt.retry_at,
    )
    setattr(fresh, field, value)
    fresh.save()


def _through_raw_sql(attempt, field, value):
    model_field = Attempt._meta.get_field(field)
    column = model_field.column
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(Attempt._meta.db_table)} SET {quote(column)} = %s WHERE id = %s",
            [model_field.get_db_prep_value(_raw_value(field, value), connection), attempt.pk],
        )


PATHS = {
    "deferred_save": _through_deferred_save,
    "queryset_update": _through_update,
    "bulk_update": _through_bulk_update,
    "new_instance_over_pk": _through_new_instance,
    "raw_sql": _through_raw_sql,
}


@pytest.mark.parametrize("path", PATHS)
def test_an_identity_change_is_refused_by_every_path(attempt, change, path):
    column, field, value = change
    before = Attempt.objects.values_list("schedule_id", "occurrence_at", "trigger").get(
        pk=attempt.pk
    )
    with pytest.raises(IntegrityError) as refused, transaction.atomic():
        PATHS[path](attempt, field, value)
    assert f".{column} cannot change" in str(refused.value)
    assert "identity" in str(refused.value)
    after = Attempt.objects.values_list("schedule_id", "occurrence_at", "trigger").get(
        pk=attempt.pk
    )
    assert after == before


@pytest.mark.parametrize("path", PATHS)
def test_writing_the_same_identity_is_allowed_by_every_path(attempt, change, path):
    _column, field, _value = change
    same = getattr(Attempt.objects.get(pk=attempt.pk), field)
    PATHS[path](attempt, field, same)
    assert getattr(Attempt.objects.get(pk=attempt.pk), field) == same


def test_the_other_fields_of_a_deferred_instance_still_save(attempt):
    loaded = Attempt.objects.only("id", "error").get(pk=attempt.pk)
    loaded.error = "a note"
    loaded.save()
    assert Attempt.objects.get(pk=attempt.pk).error == "a note"
