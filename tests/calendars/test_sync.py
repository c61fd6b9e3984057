"""CADENCE_CALENDARS: declared calendars synced like schedules, and schedules naming them."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_cadence.conf import cadence_settings
from django_cadence.models import Calendar, Schedule
from django_cadence.ops.reconcile import InvalidDeclarations, reconcile

pytestmark = pytest.mark.django_db

CALENDARS = {
    "weekends": {"rules": {"weekdays": ["sat", "sun"]}},
    "uk": {"timezone": "Europe/London", "base": "weekends", "rules": {"yearly": ["12-25"]}},
}
SCHEDULES = {
    "payroll": {
        "cron": "0 18 1 * *",
        "executor": "tests.jobs.noop",
        "calendars": ["uk"],
        "calendar_shift": "next",
    }
}


@override_settings(CADENCE_CALENDARS=CALENDARS, CADENCE_SCHEDULES=SCHEDULES)
def test_declared_calendars_and_a_schedule_naming_them_are_created_together():
    result = reconcile()
    uk = Calendar.objects.get(name="uk")
    assert uk.code_owned
    assert uk.base.name == "weekends"
    payroll = Schedule.objects.get(name="payroll")
    assert payroll.calendars == ["uk"]
    assert payroll.calendar_shift == "next"
    assert "+ created calendar uk (CADENCE_CALENDARS)" in result.lines()
    assert reconcile().changes == []  # a second sync changes nothing


def test_a_calendar_no_longer_declared_is_kept_and_handed_back():
    with override_settings(CADENCE_CALENDARS=CALENDARS):
        reconcile()
    with override_settings(CADENCE_CALENDARS={"weekends": CALENDARS["weekends"]}):
        reconcile()
    assert not Calendar.objects.get(name="uk").code_owned
    assert Calendar.objects.get(name="weekends").code_owned


@override_settings(CADENCE_CALENDARS={"a": {"base": "b"}, "b": {"base": "a"}})
def test_circular_declared_bases_are_refused_before_anything_is_written():
    with pytest.raises(InvalidDeclarations, match="circular bases"):
        reconcile()
    assert not Calendar.objects.exists()


@override_settings(CADENCE_CALENDARS={"bad": {"rules": {"dates": ["2026-13-01"]}}})
def test_an_invalid_declared_date_names_the_setting_and_the_rule():
    with pytest.raises(
        InvalidDeclarations, match=r"CADENCE_CALENDARS\['bad'\]\): rules: rules.dates"
    ):
        reconcile()
    assert not Calendar.objects.exists()


@override_settings(CADENCE_CALENDARS={"bad": {"colour": "red"}})
def test_an_unknown_declared_field_is_refused_when_the_setting_is_read():
    with pytest.raises(ImproperlyConfigured, match=r"CADENCE_CALENDARS\['bad'\]: unknown field"):
        cadence_settings.CALENDARS  # noqa: B018 - reading the setting validates it


def weekday_report(**kwargs):
    """Registered with @job(schedule=...) inside one test only."""
    return kwargs


def test_a_job_declares_its_schedule_with_calendars(settings, monkeypatch):
    from django_cadence.executors import registry as executors

    monkeypatch.setattr(executors, "_registry", dict(executors._registry))
    monkeypatch.setattr(executors, "_functions", dict(executors._functions))
    settings.CADENCE_CALENDARS = {"weekends": CALENDARS["weekends"]}
    executors.job(schedule={"cron": "0 7 * * *", "calendars": ["weekends"]})(weekday_report)
    reconcile()
    schedule = Schedule.objects.get(name="tests.calendars.test_sync.weekday_report")
    assert schedule.calendars == ["weekends"]
