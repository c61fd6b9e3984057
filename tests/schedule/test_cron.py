"""Cron syntax, normalisation, the day-field rule and plain (DST-free) instants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from itertools import islice
from zoneinfo import ZoneInfo

import pytest

from django_cadence.exceptions import InvalidSpec
from django_cadence.schedule.specs import cron_instants, is_fixed_time, validate_cron

UTC_ZONE = ZoneInfo("UTC")


def first(expr: str, after: datetime, count: int = 1, zone: str = "UTC") -> list[datetime]:
    return list(islice(cron_instants(expr, ZoneInfo(zone), after), count))


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expr", "normalised"),
    [
        pytest.param("* * * * *", "* * * * *", id="every-minute"),
        pytest.param("  0\t0  *  * *\n", "0 0 * * *", id="whitespace-collapsed"),
        pytest.param("*/15 9-17 * * mon-fri", "*/15 9-17 * * mon-fri", id="day-names"),
        pytest.param("0 0 1 JAN,Jul *", "0 0 1 jan,jul *", id="month-names-lower-cased"),
        pytest.param("0 0 * * 7", "0 0 * * 7", id="seven-is-sunday"),
        pytest.param("0 0 * * 0,7", "0 0 * * 0,7", id="zero-and-seven"),
        pytest.param("0 0 * * fri-sun", "0 0 * * fri-sun", id="range-ending-sunday"),
        pytest.param("0-30/10 */2 1-15/7 */3 *", "0-30/10 */2 1-15/7 */3 *", id="steps"),
        pytest.param("5,10,15-20 * * * *", "5,10,15-20 * * * *", id="lists"),
        pytest.param("05 09 * * *", "05 09 * * *", id="leading-zeros"),
        pytest.param("*/60 */24 */31 */12 */8", "*/60 */24 */31 */12 */8", id="widest-steps"),
        pytest.param("0 0 29 2 *", "0 0 29 2 *", id="leap-day"),
        pytest.param("0 0 30 2 mon", "0 0 30 2 mon", id="impossible-day-or-weekday"),
        pytest.param("@yearly", "@yearly", id="yearly"),
        pytest.param("@annually", "@annually", id="annually"),
        pytest.param("@monthly", "@monthly", id="monthly"),
        pytest.param("@weekly", "@weekly", id="weekly"),
        pytest.param("@DAILY", "@daily", id="daily-any-case"),
        pytest.param("@midnight", "@midnight", id="midnight"),
        pytest.param(" @hourly ", "@hourly", id="hourly-trimmed"),
    ],
)
def test_validate_cron_accepts_and_normalises(expr: str, normalised: str) -> None:
    assert validate_cron(expr) == normalised
    assert validate_cron(normalised) == normalised


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        pytest.param("", "it is empty", id="empty"),
        pytest.param("   ", "it is empty", id="blank"),
        pytest.param("garbage", "it has 1 field, expected 5", id="garbage"),
        pytest.param("0 0 * *", "it has 4 fields, expected 5", id="four-fields"),
        pytest.param("0 0 0 * * *", "seconds and year fields are not supported", id="seconds"),
        pytest.param("60 * * * *", "minute field '60': 60 is out of range 0-59", id="minute-60"),
        pytest.param("0 24 * * *", "hour field '24': 24 is out of range 0-23", id="hour-24"),
        pytest.param("0 0 0 * *", "day-of-month field '0': 0 is out of range 1-31", id="dom-0"),
        pytest.param("0 0 32 * *", "32 is out of range 1-31", id="dom-32"),
        pytest.param("0 0 * 13 *", "month field '13': 13 is out of range 1-12", id="month-13"),
        pytest.param("0 0 * * 8", "day-of-week field '8': 8 is out of range 0-7", id="dow-8"),
        pytest.param("0 0 * * 5L", "'L' (last)", id="dow-L"),
        pytest.param("0 0 15W * *", "'W' (nearest weekday)", id="W"),
        pytest.param("0 0 * * 5L#2", "'#' (nth weekday) and 'L' (last) are", id="L-and-hash"),
        pytest.param("0 0 * * 5#3", "'#' (nth weekday)", id="hash"),
        pytest.param("0 0 ? * *", "'?' (no specific value)", id="question-mark"),
        pytest.param("H * * * *", "'H' (hashed)", id="H"),
        pytest.param("H(0-29) * * * *", "'H' (hashed)", id="H-range"),
        pytest.param("@reboot", "'@reboot' is not supported", id="reboot"),
        pytest.param("@every 5m", "unknown macro '@every 5m'", id="unknown-macro"),
        pytest.param("@daily 5", "unknown macro", id="macro-with-fields"),
        pytest.param("*/0 * * * *", "step 0 is out of range", id="step-zero"),
        pytest.param("*/61 * * * *", "step 61 is out of range", id="step-too-big"),
        pytest.param("5/15 * * * *", "a step needs '*' or a range", id="step-without-range"),
        pytest.param("30-10 * * * *", "range 30-10 runs backwards", id="backwards-range"),
        pytest.param("0 0 * * sat-mon", "range 6-1 runs backwards", id="backwards-names"),
        pytest.param("1,,2 * * * *", "empty list element", id="empty-element"),
        pytest.param("mon * * * *", "'mon' is not a number", id="name-in-minute"),
        pytest.param("0 0 * foo *", "'foo' is not a number or a name", id="unknown-name"),
        pytest.param("0 0 * * monday", "'monday' is not a number or a name", id="long-name"),
        pytest.param("*-5 * * * *", "'*-5' is not valid", id="star-range"),
        pytest.param("1.5 * * * *", "'1.5' is not valid", id="decimal"),
        pytest.param("\u0661 * * * *", "is not valid", id="non-ascii-digit"),
        pytest.param("1," * 600 + "2 * * * *", "longer than 1000 characters", id="too-long"),
        pytest.param("0 0 30 2 *", "never fires", id="feb-30"),
        pytest.param("0 0 31 4,6,9,11 *", "never fires", id="31-in-short-months"),
        pytest.param("0 0 30,31 feb *", "never fires", id="feb-30-31-names"),
        pytest.param("0 0 31 2 */2", "never fires", id="feb-31-with-weekday-step"),
    ],
)
def test_validate_cron_rejects_with_reason(expr: str, reason: str) -> None:
    with pytest.raises(InvalidSpec, match="Invalid cron expression") as caught:
        validate_cron(expr)
    assert reason in str(caught.value)


def test_invalid_message_quotes_the_expression_as_written() -> None:
    with pytest.raises(InvalidSpec) as caught:
        validate_cron("0 0 15W * *")
    assert str(caught.value).startswith("Invalid cron expression '0 0 15W * *': ")


def test_never_fires_message_names_the_fields() -> None:
    with pytest.raises(InvalidSpec) as caught:
        validate_cron("0 0 30 2 *")
    assert "never fires: day-of-month '30' never occurs in month '2'" in str(caught.value)


@pytest.mark.parametrize("value", [None, 5, b"* * * * *"], ids=["none", "int", "bytes"])
def test_validate_cron_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidSpec, match="must be a string"):
        validate_cron(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "fields"),
    [
        ("59 23 31 2,4,6,9,11 */3", "day-of-month '31' never occurs in month '2,4,6,9,11'"),
        ("0 0 30,31 feb *", "day-of-month '30,31' never occurs in month 'feb'"),
        ("0 0 31 4-6/2 *", "day-of-month '31' never occurs in month '4-6/2'"),
    ],
    ids=["stepped-weekday", "names", "stepped-months"],
)
def test_an_expression_that_never_fires_is_refused_from_its_fields(expr: str, fields: str):
    """Decided from the fields' sets, without looking for a date (bounded time: a search
    would walk 400 years of calendar first). ``python -m benchmarks cron`` times it."""
    with pytest.raises(InvalidSpec, match="never fires") as caught:
        validate_cron(expr)
    assert fields in str(caught.value)


@pytest.mark.parametrize(
    ("expr", "fixed"),
    [
        pytest.param("30 2 * * *", True, id="fixed"),
        pytest.param("0 1-3 * * *", True, id="fixed-range"),
        pytest.param("0,30 9,17 * * *", True, id="fixed-lists"),
        pytest.param("0-59 0-23 * * *", True, id="explicit-full-ranges"),
        pytest.param("*/15 * * * *", False, id="step-minutes"),
        pytest.param("0 * * * *", False, id="every-hour"),
        pytest.param("0 */2 * * *", False, id="step-hours"),
        pytest.param("* 3 * * *", False, id="every-minute-of-an-hour"),
        pytest.param("@daily", True, id="daily"),
        pytest.param("@midnight", True, id="midnight"),
        pytest.param("@weekly", True, id="weekly"),
        pytest.param("@monthly", True, id="monthly"),
        pytest.param("@yearly", True, id="yearly"),
        pytest.param("@hourly", False, id="hourly"),
    ],
)
def test_is_fixed_time(expr: str, fixed: bool) -> None:
    assert is_fixed_time(expr) is fixed


def test_is_fixed_time_rejects_invalid() -> None:
    with pytest.raises(InvalidSpec):
        is_fixed_time("61 * * * *")


# --- The day-field rule: a '*'-led field makes both required; otherwise either suffices.
# June 2026: Monday the 1st; the 13th is a Saturday; the 15th is a Monday.


@pytest.mark.parametrize(
    ("expr", "expected_days"),
    [
        pytest.param("0 0 13 6 *", [13], id="dom-only"),
        pytest.param("0 0 * 6 1", [1, 8, 15, 22, 29], id="dow-only"),
        pytest.param("0 0 13 6 1", [1, 8, 13, 15, 22, 29], id="both-restricted-either"),
        pytest.param("0 0 13 6 mon", [1, 8, 13, 15, 22, 29], id="both-restricted-names"),
        pytest.param("0 0 1-3 6 1-2", [1, 2, 3, 8, 9, 15, 16, 22, 23, 29, 30], id="ranges-either"),
        pytest.param("0 0 */2 6 1", [1, 15, 29], id="dom-star-step-and"),
        pytest.param("0 0 13 6 */7", [], id="dow-star-step-and-no-sunday-13th"),
        pytest.param("0 0 1-14 6 */7", [7, 14], id="dow-star-step-and-sundays"),
        pytest.param("0 0 * 6 0-7", list(range(1, 31)), id="dow-full-range"),
        pytest.param("0 0 1 6 0-7", list(range(1, 31)), id="dom-or-every-weekday"),
        pytest.param("0 0 * 6 7", [7, 14, 21, 28], id="seven-is-sunday"),
        pytest.param("0 0 * 6 7-7", [7, 14, 21, 28], id="degenerate-range-seven"),
        pytest.param("0 0 13-13 6 *", [13], id="degenerate-range"),
        pytest.param(
            "0 0 * 6 fri-sun", [5, 6, 7, 12, 13, 14, 19, 20, 21, 26, 27, 28], id="fri-sun"
        ),
        pytest.param("0 0 * 6 sun-sun", [7, 14, 21, 28], id="sun-sun"),
    ],
)
def test_day_fields(expr: str, expected_days: list[int]) -> None:
    got = first(expr, utc(2026, 5, 31, 12), 40)
    assert [d.day for d in got if d.month == 6 and d.year == 2026] == expected_days


def test_dow_and_mode_finds_a_rare_combination() -> None:
    # 29 February on a Sunday: 2032, then 2060 (AND because the weekday field is '*/7').
    assert first("0 0 29 2 */7", utc(2026, 1, 1), 2) == [utc(2032, 2, 29), utc(2060, 2, 29)]


def test_leap_day_skips_the_century_year() -> None:
    assert first("0 0 29 2 *", utc(2096, 3, 1), 1) == [utc(2104, 2, 29)]


def test_leap_day_or_monday_fires_every_monday_in_february() -> None:
    got = first("0 0 29 2 1", utc(2026, 1, 1), 5)
    assert got == [utc(2026, 2, d) for d in (2, 9, 16, 23)] + [utc(2027, 2, 1)]


# --- Plain instants.


@pytest.mark.parametrize(
    ("expr", "after", "expected"),
    [
        pytest.param(
            "* * * * *",
            utc(2026, 1, 1, 0, 0, 30),
            [utc(2026, 1, 1, 0, 1), utc(2026, 1, 1, 0, 2)],
            id="every-minute-from-mid-minute",
        ),
        pytest.param(
            "* * * * *",
            utc(2026, 1, 1, 0, 1),
            [utc(2026, 1, 1, 0, 2)],
            id="strictly-after",
        ),
        pytest.param(
            "*/5 * * * *",
            utc(2026, 12, 31, 23, 57),
            [utc(2027, 1, 1, 0, 0), utc(2027, 1, 1, 0, 5)],
            id="across-new-year",
        ),
        pytest.param(
            "0 9 * * mon-fri",
            utc(2026, 6, 5, 9),  # a Friday, at the slot
            [utc(2026, 6, 8, 9), utc(2026, 6, 9, 9)],
            id="weekdays",
        ),
        pytest.param("@yearly", utc(2026, 1, 1), [utc(2027, 1, 1)], id="yearly"),
        pytest.param("@monthly", utc(2026, 1, 31), [utc(2026, 2, 1)], id="monthly"),
        pytest.param("@weekly", utc(2026, 6, 1), [utc(2026, 6, 7)], id="weekly-on-sunday"),
        pytest.param("@hourly", utc(2026, 6, 1, 5, 59), [utc(2026, 6, 1, 6)], id="hourly"),
        pytest.param("0 0 31 * *", utc(2026, 1, 31), [utc(2026, 3, 31)], id="skips-short-months"),
    ],
)
def test_plain_instants(expr: str, after: datetime, expected: list[datetime]) -> None:
    assert first(expr, after, len(expected)) == expected


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        pytest.param("Asia/Kolkata", utc(2026, 6, 1, 3, 30), id="kolkata-plus-0530"),
        pytest.param("Pacific/Chatham", utc(2026, 5, 31, 20, 15), id="chatham-plus-1245"),
        pytest.param("America/New_York", utc(2026, 6, 1, 13), id="new-york-edt"),
        pytest.param("Etc/GMT+12", utc(2026, 6, 1, 21), id="minus-12"),
        pytest.param("Pacific/Kiritimati", utc(2026, 5, 31, 19), id="plus-14"),
    ],
)
def test_fields_are_read_in_the_zone(zone: str, expected: datetime) -> None:
    assert first("0 9 1 6 *", utc(2026, 5, 1), 1, zone) == [expected]


def test_naive_after_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        cron_instants("* * * * *", UTC_ZONE, datetime(2026, 1, 1))


def test_invalid_expression_raises_before_iteration() -> None:
    with pytest.raises(InvalidSpec):
        cron_instants("0 0 30 2 *", UTC_ZONE, utc(2026, 1, 1))


def test_fixed_offset_zone_is_accepted() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert next(cron_instants("0 12 * * *", plus_two, utc(2026, 1, 1))) == utc(2026, 1, 1, 10)


def test_stops_at_the_end_of_the_calendar() -> None:
    assert first("0 0 1 1 *", utc(9998, 6, 1), 3) == []
