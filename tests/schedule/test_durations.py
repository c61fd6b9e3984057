"""Durations as people type them; ``"00:05"`` is refused, never read as five seconds."""

from datetime import timedelta

import pytest

from django_cadence.schedule.durations import DurationError, parse, short


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("5 minutes", timedelta(minutes=5)),
        ("1 minute", timedelta(minutes=1)),
        ("1h 30m", timedelta(hours=1, minutes=30)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2 hours, 15 minutes", timedelta(hours=2, minutes=15)),
        ("90 s", timedelta(seconds=90)),
        ("1 day", timedelta(days=1)),
        ("2 weeks", timedelta(weeks=2)),
        ("0:05:00", timedelta(minutes=5)),
        ("3 days 0:05:00", timedelta(days=3, minutes=5)),
        ("PT5M", timedelta(minutes=5)),
        ("300", timedelta(minutes=5)),
        (300, timedelta(minutes=5)),
        (1.5, timedelta(seconds=1.5)),
        (timedelta(hours=2), timedelta(hours=2)),
        (None, None),
    ],
)
def test_durations_accepted_forms(typed, expected):
    assert parse(typed) == expected


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("00:05", "write '5 minutes' or '0:05:00' for hours and minutes, or '5s'"),
        ("5:30", "write '5h 30m' or '5:30:00' for hours and minutes, or '5m 30s'"),
    ],
)
def test_durations_minutes_seconds_form_is_refused_as_ambiguous(typed, suggested):
    with pytest.raises(DurationError) as excinfo:
        parse(typed)
    assert f"{typed!r} is ambiguous: {suggested}" in str(excinfo.value)


@pytest.mark.parametrize("typed", ["soon", "5 parsecs", "minutes", "-5 minutes", [5], True])
def test_durations_anything_else_names_the_accepted_forms(typed):
    with pytest.raises(DurationError) as excinfo:
        parse(typed)
    message = str(excinfo.value)
    assert "'5 minutes'" in message
    assert "'0:05:00'" in message
    assert "'PT5M'" in message
    assert repr(typed) in message


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("45s", timedelta(seconds=45)),
        (" 2W ", timedelta(weeks=2)),
        ("0d", timedelta(0)),
    ],
)
def test_short_reads_a_whole_number_and_one_unit_letter(typed, expected):
    assert short(typed) == expected


@pytest.mark.parametrize("typed", ["30", "1.5h", "1h30m", "30 d", "5 minutes", "PT5M", "-1d", ""])
def test_short_refuses_what_only_the_full_reading_takes(typed):
    assert short(typed) is None
