"""Calendars on the admin: the calendar's page, and the schedule preview's marks."""

import json

import pytest
from django.urls import reverse

from django_cadence.models import Calendar

PREVIEW = reverse("admin:django_cadence_schedule_preview")


@pytest.fixture
def uk(db):
    return Calendar.objects.create(
        name="uk-bank-holidays", rules={"weekdays": ["sat", "sun"], "dates": ["2026-06-03"]}
    )


def preview(client, **params):
    response = client.get(PREVIEW, {"timezone": "UTC", "kind": "cron", **params})
    assert response.status_code == 200
    return response.json()


def test_the_preview_marks_excluded_occurrences(admin_client, uk):
    data = preview(
        admin_client,
        cron="0 9 * * *",
        calendars=json.dumps([uk.name]),
        calendar_shift="skip",
        after="2026-06-01T12:00:00Z",  # a Monday
    )
    assert data["errors"] == {}
    first = [(o["utc"][:10], o.get("calendar", "")) for o in data["occurrences"][:6]]
    assert first == [
        ("2026-06-02", ""),
        ("2026-06-03", "skipped: calendar uk-bank-holidays"),
        ("2026-06-04", ""),
        ("2026-06-05", ""),
        ("2026-06-06", "skipped: calendar uk-bank-holidays"),
        ("2026-06-07", "skipped: calendar uk-bank-holidays"),
    ]


def test_the_preview_marks_shifted_occurrences(admin_client, uk):
    data = preview(
        admin_client,
        cron="0 9 3 * *",
        calendars=json.dumps([uk.name]),
        calendar_shift="next",
        after="2026-06-01T12:00:00Z",
    )
    first = [(o["utc"][:10], o.get("calendar", "")) for o in data["occurrences"][:2]]
    assert first == [
        ("2026-06-03", "skipped: calendar uk-bank-holidays, moved to the next included day"),
        ("2026-06-04", "shifted: runs here in place of an excluded day"),
    ]


def test_the_preview_names_an_unknown_calendar(admin_client, db):
    data = preview(admin_client, cron="0 9 * * *", calendars='["nope"]', calendar_shift="skip")
    assert data["errors"] == {"calendars": ["Unknown calendar 'nope'."]}


def test_the_calendar_page_lists_its_next_excluded_days_and_its_schedules(
    admin_client, uk, make_schedule
):
    schedule = make_schedule(name="payroll", calendars=[uk.name])
    url = reverse("admin:django_cadence_calendar_change", args=[uk.pk])
    page = admin_client.get(url).content.decode()
    assert "Next excluded days" in page
    assert "uk-bank-holidays" in page
    assert reverse("admin:django_cadence_schedule_change", args=[schedule.pk]) in page
    assert page.count("<li>Sat ") + page.count("<li>Sun ") >= 4


def test_a_calendar_in_use_is_not_deleted_from_the_admin(admin_client, uk, make_schedule):
    make_schedule(name="payroll", calendars=[uk.name])
    url = reverse("admin:django_cadence_calendar_delete", args=[uk.pk])
    response = admin_client.post(url, {"post": "yes"}, follow=True)
    assert Calendar.objects.filter(pk=uk.pk).exists()
    assert "used by payroll" in response.content.decode()


def test_the_calendar_list_counts_schedules(admin_client, uk, make_schedule):
    make_schedule(calendars=[uk.name])
    page = admin_client.get(reverse("admin:django_cadence_calendar_changelist")).content
    assert b"uk-bank-holidays" in page


def test_cadence_status_says_which_schedules_skip_calendar_days(uk, make_schedule):
    from io import StringIO

    from django.core.management import call_command

    make_schedule(name="payroll", calendars=[uk.name], calendar_shift="previous")
    out = StringIO()
    call_command("cadence_status", stdout=out)
    assert (
        "Calendars: payroll skips the days of uk-bank-holidays (shifted to the previous day)"
        in out.getvalue()
    )
    out = StringIO()
    call_command("cadence_status", "--json", stdout=out)
    (shown,) = json.loads(out.getvalue())["schedules"]
    assert shown["calendars"] == ["uk-bank-holidays"]


def test_the_preview_of_the_last_day_shifted_back(admin_client, uk):
    """``L`` under weekends, shifted back: Sunday 31 January 2027 runs on Friday the 29th."""
    data = preview(
        admin_client,
        cron="0 18 L * *",
        calendars=json.dumps([uk.name]),
        calendar_shift="previous",
        after="2027-01-01T00:00:00Z",
    )
    assert data["errors"] == {}
    first = [(o["utc"][:10], o.get("calendar", "")) for o in data["occurrences"][:4]]
    assert first == [
        ("2027-01-29", "shifted: runs here in place of an excluded day"),
        ("2027-01-31", "skipped: calendar uk-bank-holidays, moved to the previous included day"),
        ("2027-02-26", "shifted: runs here in place of an excluded day"),
        ("2027-02-28", "skipped: calendar uk-bank-holidays, moved to the previous included day"),
    ]
