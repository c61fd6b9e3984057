"""An attempt's identity (schedule, occurrence, trigger) cannot change once written.

docs/design.md, invariant 1: one attempt per occurrence. Moving a row to another occurrence
through the ORM would let two rows describe one occurrence's fate, or none.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError

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
