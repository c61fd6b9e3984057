"""The admin answers every request with a page or a clear message: odd text, a selection
that mixes states, instants past year 9999, an over-long search (docs/admin-tour.md)."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from django_cadence.admin import guard
from django_cadence.admin.forms import OUT_OF_RANGE
from django_cadence.models import Attempt, Schedule

from .test_admin_schedules import form_data

ADD = reverse("admin:django_cadence_schedule_add")
CHANGELIST = reverse("admin:django_cadence_schedule_changelist")
PREVIEW = reverse("admin:django_cadence_schedule_preview")
# A lone surrogate as JSON spells it: what an undecodable file name becomes.
SURROGATE_JSON = '{"file": "r\\udcffport.csv"}'


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.mark.parametrize("field", ["payload", "metadata"])
def test_admin_form_redisplays_a_lone_surrogate_as_its_escape(admin_client, field):
    """Shown again (a bad cron keeps the form invalid whatever the field's own checks)."""
    response = admin_client.post(ADD, form_data(cron="bogus", **{field: SURROGATE_JSON}))
    assert response.status_code == 200  # the form again, with the problems on their fields
    assert "cron" in response.context["adminform"].form.errors
    assert "r\\udcffport.csv" in response.content.decode()
    assert not Schedule.objects.exists()


def test_admin_shows_a_stored_lone_surrogate_as_its_escape(admin_client, make_schedule, client):
    """Only SQLite stores a lone surrogate (as its JSON escape), behind the validation's back;
    PostgreSQL and MariaDB refuse it, so no page of theirs can meet one."""
    schedule = make_schedule()
    odd = {"file": "r\udcffport.csv", "password": "x"}
    try:
        with transaction.atomic():
            Schedule.objects.filter(pk=schedule.pk).update(payload=odd, metadata=odd)
    except DatabaseError:
        assert connection.vendor != "sqlite"
        return
    assert connection.vendor == "sqlite"
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=datetime(2026, 1, 1, tzinfo=UTC),
        status="dead_letter",
        outcome=odd,
    )
    assert admin_client.get(reverse("admin:django_cadence_attempt_changelist")).status_code == 200
    for url in (
        reverse("admin:django_cadence_schedule_change", args=[schedule.pk]),
        reverse("admin:django_cadence_attempt_change", args=[Attempt.objects.get().pk]),
    ):
        response = admin_client.get(url)
        assert response.status_code == 200
        assert "r\\udcffport.csv" in response.content.decode()


def test_admin_bulk_run_now_acts_on_the_rest_and_names_the_skipped(admin_client, make_schedule):
    first, paused, last = make_schedule(), make_schedule(enabled=False), make_schedule()
    response = admin_client.post(
        CHANGELIST,
        {"action": "run_now", "_selected_action": [first.pk, paused.pk, last.pk], "index": "0"},
    )
    assert response.status_code == 302
    assert messages_of(response) == [
        (
            f"2 runs queued. 1 left alone: “{paused.name}” (paused: to run it once while it "
            "stays paused, use Run now on its page)."
        )
    ]
    assert set(Attempt.objects.values_list("schedule", flat=True)) == {first.pk, last.pk}
    assert LogEntry.objects.count() == 2


def test_admin_bulk_run_now_skips_a_schedule_paused_meanwhile(
    admin_client, make_schedule, monkeypatch
):
    """Paused between the page and the click: refused by the service, inside its own
    transaction, so nothing of it is written (no log entry either), and the rest go on."""
    from django_cadence.admin import schedule_actions

    first, second = make_schedule(), make_schedule()
    real = schedule_actions.services.trigger

    def trigger(schedule, **kwargs):
        if schedule.pk == first.pk:
            Schedule.objects.filter(pk=first.pk).update(enabled=False)
        return real(schedule, **kwargs)

    monkeypatch.setattr(schedule_actions.services, "trigger", trigger)
    response = admin_client.post(
        CHANGELIST, {"action": "run_now", "_selected_action": [first.pk, second.pk], "index": "0"}
    )
    [message] = messages_of(response)
    assert message.startswith(f"1 run queued. 1 left alone: “{first.name}” (")
    assert "paused" in message
    assert list(Attempt.objects.values_list("schedule", flat=True)) == [second.pk]
    assert list(LogEntry.objects.values_list("object_id", flat=True)) == [str(second.pk)]


def test_admin_bulk_resume_and_pause_name_what_they_left_alone(admin_client, make_schedule):
    running, paused = make_schedule(), make_schedule(enabled=False)
    selection = {"_selected_action": [running.pk, paused.pk], "index": "0"}
    response = admin_client.post(CHANGELIST, {"action": "resume", **selection})
    assert messages_of(response) == [
        f"1 schedule resumed. 1 left alone: “{running.name}” (not paused)."
    ]
    response = admin_client.post(CHANGELIST, {"action": "pause", **selection})
    assert messages_of(response)[-1] == "2 schedules paused."


OVERFLOWS = [
    ("9999-12-31", "23:30:00", "America/New_York"),  # west of Greenwich: past year 9999
    ("0001-01-01", "00:30:00", "Asia/Tokyo"),  # east of it: before year 1
]


@pytest.mark.parametrize(("day", "time", "zone"), OVERFLOWS, ids=["year-9999", "year-1"])
@pytest.mark.parametrize("field", ["run_at", "start_at", "end_at"])
def test_admin_form_refuses_an_instant_out_of_range_in_utc(admin_client, day, time, zone, field):
    kind = {"kind": "once", "cron": ""} if field == "run_at" else {}
    data = form_data(timezone=zone, **kind, **{f"{field}_0": day, f"{field}_1": time})
    response = admin_client.post(ADD, data)
    assert response.status_code == 200
    assert OUT_OF_RANGE in response.context["adminform"].form.errors[field]
    assert not Schedule.objects.exists()


EDGES = [
    ("0001-01-01", "00:00:00", "UTC"),
    ("9999-12-31", "12:00:00", "UTC"),
    ("0001-01-01", "12:00:00", "Asia/Tokyo"),  # its local mean time then: 02:41 UTC
]


@pytest.mark.parametrize(("day", "time", "zone"), EDGES, ids=["first", "last", "east"])
@pytest.mark.parametrize("field", ["run_at", "start_at", "end_at"])
def test_admin_form_refuses_an_instant_at_the_ends_of_the_calendar_on_its_field(
    admin_client, day, time, zone, field
):
    """In UTC it exists, but a schedule cannot be computed or shown there: a field error, and
    never a server error when the schedule is saved."""
    kind = {"kind": "once", "cron": ""} if field == "run_at" else {}
    data = form_data(timezone=zone, **kind, **{f"{field}_0": day, f"{field}_1": time})
    response = admin_client.post(ADD, data)
    assert response.status_code == 200
    shown = datetime.fromisoformat(f"{day}T{time}").replace(tzinfo=ZoneInfo(zone)).isoformat()
    assert response.context["adminform"].form.errors[field] == [
        f"{field} must fall within the years 2 to 9998 (UTC), not {shown}."
    ]
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(("day", "time", "zone"), OVERFLOWS, ids=["year-9999", "year-1"])
@pytest.mark.parametrize("field", ["run_at", "start_at", "end_at"])
def test_admin_preview_refuses_an_instant_out_of_range_in_utc(admin_client, day, time, zone, field):
    kind = "once" if field == "run_at" else "cron"
    params = {"kind": kind, "cron": "* * * * *", "timezone": zone}
    response = admin_client.get(PREVIEW, {**params, f"{field}_0": day, f"{field}_1": time})
    assert response.status_code == 200
    data = response.json()
    assert data["occurrences"] == []
    assert data["errors"][field] == [OUT_OF_RANGE]


def test_admin_preview_of_a_cron_ending_in_year_9999_is_an_answer(admin_client):
    """The last occurrences of the calendar: shown up to where ``datetime`` ends, never a 500."""
    response = admin_client.get(
        PREVIEW,
        {"kind": "cron", "cron": "59 23 31 12 *", "timezone": "UTC", "after": "9998-12-31T00:00Z"},
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "term",
    ["x" * (guard.MAX_SEARCH_CHARS + 1), " ".join(["a"] * (guard.MAX_SEARCH_TERMS + 1))],
    ids=["too-long", "too-many-words"],
)
@pytest.mark.parametrize("page", ["schedule", "attempt", "deadletter", "retry", "worker"])
def test_admin_refuses_an_over_long_search_with_a_message(admin_client, make_schedule, page, term):
    make_schedule(name="a" * 200)  # every word of the long search is in its name
    response = admin_client.get(reverse(f"admin:django_cadence_{page}_changelist"), {"q": term})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []
    [message] = messages_of(response)
    assert message.startswith("The search ")
