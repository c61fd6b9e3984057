"""Instants are shown to the second and labelled with their zone."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from django.test import override_settings

from django_cadence.schedule.timefmt import format_instant, format_utc

WINTER = datetime(2026, 12, 5, 7, 30, 5, 681910, tzinfo=UTC)
SUMMER = datetime(2026, 7, 5, 7, 30, 5, tzinfo=UTC)


def test_an_instant_is_shown_in_the_named_zone_to_the_second_with_its_abbreviation():
    assert format_instant(WINTER, "America/New_York") == "2026-12-05 02:30:05 EST"
    assert format_instant(SUMMER, ZoneInfo("America/New_York")) == "2026-07-05 03:30:05 EDT"


def test_without_a_zone_the_current_django_zone_is_used():
    with override_settings(TIME_ZONE="Europe/Paris"):
        assert format_instant(WINTER) == "2026-12-05 08:30:05 CET"


def test_utc_is_labelled_utc():
    assert format_utc(WINTER) == "2026-12-05 07:30:05 UTC"


def test_a_missing_instant_is_a_dash():
    assert format_instant(None, "UTC") == "-"
    assert format_utc(None) == "-"
