"""An attempt's identity (schedule, occurrence, trigger) cannot change once written.

docs/design.md, invariants 1 and 7: one attempt per occurrence, and its identity fixed by
every ORM path on every database (the model's guard raises ``IdentityChanged``), and by raw
SQL where the store has a trigger (a plain ``IntegrityError`` with the same words). Moving a
row to another occurrence would let two rows describe one occurrence's fate, or none.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection, transaction

from django_cadence import store
from django_cadence.exceptions import IdentityChanged
from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LATER = T0 + timedelta(hours=1)
IDENTITY = ("schedule_id", "occurrence_at", "trigger")


@pytest.fixture
def attempt(make_schedule):
    schedule = make_schedule(interval=timedelta(minutes=1))
    return Attempt.objects.create(schedule=schedule, occurrence_at=T0, retry_at=T0)


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


def _through_loaded_save(attempt, field, value):
    loaded = Attempt.objects.get(pk=attempt.pk)
    setattr(loaded, field, value)
    loaded.save()


def _through_creating_instance(attempt, field, value):
    setattr(attempt, field, value)
    attempt.save()


def _through_deferred_save(attempt, field, value):
    loaded = Attempt.objects.only("id", "status").get(pk=attempt.pk)
    setattr(loaded, field, value)
    loaded.save()


def _through_update(attempt, field, value):
    Attempt.objects.filter(pk=attempt.pk).update(**{field: value})


def _through_bulk_update(attempt, field, value):
    loaded = Attempt.objects.get(pk=attempt.pk)
    loaded.__dict__[Attempt._meta.get_field(field).attname] = _raw_value(field, value)
    Attempt.objects.bulk_update([loaded], [field, "error"])


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
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(Attempt._meta.db_table)} SET {quote(model_field.column)} = %s "
            "WHERE id = %s",
            [model_field.get_db_prep_value(_raw_value(field, value), connection), attempt.pk],
        )


ORM_PATHS = {
    "loaded_save": _through_loaded_save,
    "creating_instance_save": _through_creating_instance,
    "deferred_save": _through_deferred_save,
    "queryset_update": _through_update,
    "bulk_update": _through_bulk_update,
    "new_instance_over_pk": _through_new_instance,
}
PATHS = {**ORM_PATHS, "raw_sql": _through_raw_sql}


def _identity(pk):
    return Attempt.objects.values_list(*IDENTITY).get(pk=pk)


@pytest.mark.parametrize("path", ORM_PATHS)
def test_an_identity_change_is_refused_by_every_orm_path_on_every_database(attempt, change, path):
    """``IdentityChanged``, not the trigger's plain IntegrityError: the ORM guard refused."""
    column, field, value = change
    before = _identity(attempt.pk)
    with pytest.raises(IdentityChanged) as refused:
        ORM_PATHS[path](attempt, field, value)
    assert str(refused.value) == (
        f"{Attempt._meta.db_table}.{column} cannot change: the schedule, occurrence and "
        "trigger of an attempt are its identity (invariant 7, docs/design.md); create a new "
        "attempt instead"
    )
    assert isinstance(refused.value, IntegrityError)
    assert _identity(attempt.pk) == before


def test_raw_sql_changing_the_identity_is_refused_where_the_database_has_the_trigger(
    attempt, change
):
    """PostgreSQL and SQLite refuse it with the trigger. MariaDB/MySQL have none by design
    (invariant 7: creating one needs SUPER or ``log_bin_trust_function_creators`` where binary
    logging is on), so there raw SQL writes: the ORM guard is the whole of the invariant."""
    column, field, value = change
    before = _identity(attempt.pk)
    if not store.of().has_identity_trigger:
        with transaction.atomic():
            _through_raw_sql(attempt, field, value)
        assert _identity(attempt.pk) != before
        return
    with pytest.raises(IntegrityError) as refused, transaction.atomic():
        _through_raw_sql(attempt, field, value)
    assert f"{Attempt._meta.db_table}.{column} cannot change" in str(refused.value)
    assert "identity (invariant 7" in str(refused.value)
    assert _identity(attempt.pk) == before


@pytest.mark.parametrize("path", PATHS)
def test_writing_the_same_identity_is_allowed_by_every_path(attempt, change, path):
    _column, field, _value = change
    same = getattr(Attempt.objects.get(pk=attempt.pk), field)
    PATHS[path](attempt, field, same)
    assert getattr(Attempt.objects.get(pk=attempt.pk), field) == same


def test_a_refused_update_leaves_the_transaction_usable(attempt):
    """The guard refuses before writing, so a caller's transaction can go on."""
    with transaction.atomic():
        with pytest.raises(IdentityChanged):
            Attempt.objects.filter(pk=attempt.pk).update(occurrence_at=LATER, error="x")
        Attempt.objects.filter(pk=attempt.pk).update(error="a note")
    assert Attempt.objects.get(pk=attempt.pk).error == "a note"


def test_an_update_refuses_when_any_matched_row_would_change(attempt, make_schedule):
    second = Attempt.objects.create(schedule=attempt.schedule, occurrence_at=LATER, retry_at=LATER)
    with pytest.raises(IdentityChanged, match=r"\.occurrence_at cannot change"):
        Attempt.objects.filter(pk__in=[attempt.pk, second.pk]).update(occurrence_at=T0)
    assert _identity(second.pk)[1] == LATER


def test_a_refused_bulk_update_writes_no_batch_and_leaves_the_transaction_usable(attempt):
    second = Attempt.objects.create(schedule=attempt.schedule, occurrence_at=LATER, retry_at=LATER)
    first, moved = Attempt.objects.order_by("pk")
    first.error = "written by the first batch"
    moved.occurrence_at = LATER + timedelta(hours=1)
    with transaction.atomic():
        with pytest.raises(IdentityChanged):
            Attempt.objects.bulk_update([first, moved], ["error", "occurrence_at"], batch_size=1)
        assert Attempt.objects.get(pk=attempt.pk).error == ""
    assert _identity(second.pk)[1] == LATER


def test_other_fields_still_save(attempt):
    loaded = Attempt.objects.get(pk=attempt.pk)
    loaded.error = "a note"
    loaded.save()
    deferred = Attempt.objects.only("id", "error").get(pk=attempt.pk)
    deferred.error += " and another"
    deferred.save()
    assert Attempt.objects.get(pk=attempt.pk).error == "a note and another"


# Writes that name no identity field pay nothing for the guard: the engine's all do.


def test_writes_naming_no_identity_field_cost_no_extra_query(attempt, django_assert_num_queries):
    loaded = Attempt.objects.get(pk=attempt.pk)
    with django_assert_num_queries(1):
        Attempt.objects.filter(pk=attempt.pk).update(error="a", status="cancelled")
    with django_assert_num_queries(1):
        Attempt.objects.bulk_update([loaded], ["error", "status"])
    with django_assert_num_queries(1):
        loaded.save()  # every field, identity included, compared with the loaded values
    loaded.occurrence_at = LATER  # not written: update_fields leaves it out
    with django_assert_num_queries(1):
        loaded.save(update_fields=["error"])
    assert _identity(attempt.pk)[1] == T0


def test_only_a_write_naming_an_identity_field_reads_the_stored_row(
    attempt, django_assert_num_queries
):
    with django_assert_num_queries(2):  # the check, then the update
        Attempt.objects.filter(pk=attempt.pk).update(trigger=attempt.trigger)
    fresh = Attempt(pk=attempt.pk, schedule_id=attempt.schedule_id, occurrence_at=T0, retry_at=T0)
    with django_assert_num_queries(2):  # the stored row, then the save
        fresh.save()
