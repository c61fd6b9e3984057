"""``L`` in day-of-month: the last day of the month, alone or in a list, checked by a day walk."""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, timedelta
from itertools import islice, takewhile
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from django_cadence.exceptions import InvalidSpec
from django_cadence.schedule.cron_syntax import parse_cron
from django_cadence.schedule.specs import cron_instants, validate_cron


def days_of(expr: str, after: datetime, count: int, zone: str = "UTC") -> list[str]:
    got = islice(cron_instants(expr, ZoneInfo(zone), after), count)
    return [t.astimezone(ZoneInfo(zone)).date().isoformat() for t in got]


@pytest.mark.parametrize(
    ("expr", "normalised"),
    [
        pytest.param("0 18 L * *", "0 18 L * *", id="alone"),
        pytest.param("0 18 l * *", "0 18 L * *", id="upper-cased"),
        pytest.param("0 18 15,l * *", "0 18 15,L * *", id="in-a-list"),
        pytest.param("0 18 L,1-5 FEB *", "0 18 L,1-5 feb *", id="first-in-a-list"),
        pytest.param("0 18 L * fri", "0 18 L * fri", id="with-a-weekday"),
    ],
)
def test_last_is_accepted_and_written_upper_case(expr: str, normalised: str) -> None:
    assert validate_cron(expr) == normalised
    assert validate_cron(normalised) == normalised


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        pytest.param(
            "0 0 L-3 * *", "day-of-month field 'L-3': 'L-3' is not supported: 'L' (last)", id="L-3"
        ),
        pytest.param(
            "0 0 1-L * *", "'1-L' is not supported: 'L' (last) stands alone", id="range-to-L"
        ),
        pytest.param("0 0 L/2 * *", "'L/2' is not supported: 'L' (last) stands alone", id="L-step"),
        pytest.param("0 0 5L * *", "'5L' is not supported: 'L' (last) stands alone", id="5L"),
        pytest.param("0 0 LW * *", "'W' (nearest weekday) is a non-standard extension", id="LW"),
        pytest.param("0 0 * * 5L", "'L' (last) is a non-standard extension", id="dow-L"),
        pytest.param("0 0 * * L", "'L' (last) is a non-standard extension", id="dow-L-alone"),
        pytest.param("0 0 * L *", "month field 'L': 'L' (last) is a non", id="month-L"),
        pytest.param("L 0 * * *", "minute field 'L'", id="minute-L"),
        pytest.param("0 0 15W * *", "'W' (nearest weekday)", id="W"),
        pytest.param("0 0 * * 5#3", "'#' (nth weekday)", id="hash"),
        pytest.param("0 0 ? * *", "'?' (no specific value)", id="question-mark"),
        pytest.param("H 0 * * *", "'H' (hashed)", id="H"),
    ],
)
def test_other_uses_of_last_and_other_extensions_stay_refused(expr: str, reason: str) -> None:
    with pytest.raises(InvalidSpec, match="Invalid cron expression") as caught:
        validate_cron(expr)
    assert reason in str(caught.value)


def test_the_fields_carry_the_last_day_apart_from_the_numbered_days() -> None:
    alone = parse_cron("0 18 L * *")
    assert (alone.days, alone.last_day, alone.days_and) == ((), True, True)
    listed = parse_cron("0 18 15,L * fri")
    assert (listed.days, listed.last_day, listed.days_and) == ((15,), True, False)
    assert not parse_cron("0 18 31 * *").last_day


def test_last_never_fails_the_never_fires_check() -> None:
    """Every month has a last day: ``L`` makes a month set fire whatever else is listed."""
    assert validate_cron("0 0 30,L 2 *") == "0 0 30,L 2 *"
    with pytest.raises(InvalidSpec, match="never fires"):
        validate_cron("0 0 30 2 *")


@pytest.mark.parametrize(
    ("year", "last"),
    [(2024, "2024-02-29"), (2027, "2027-02-28"), (2000, "2000-02-29"), (2100, "2100-02-28")],
    ids=["leap", "common", "leap-century", "common-century"],
)
def test_last_in_february_of_leap_and_common_years(year: int, last: str) -> None:
    assert days_of("0 0 L 2 *", datetime(year, 1, 1, tzinfo=UTC), 1) == [last]


def test_last_on_months_of_30_and_31_days() -> None:
    got = days_of("0 18 L * *", datetime(2027, 1, 1, tzinfo=UTC), 12)
    assert got == [
        "2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30", "2027-05-31", "2027-06-30",
        "2027-07-31", "2027-08-31", "2027-09-30", "2027-10-31", "2027-11-30", "2027-12-31",
    ]  # fmt: skip


def test_a_listed_day_that_is_also_the_last_fires_once() -> None:
    assert days_of("0 0 28,L 2 *", datetime(2027, 1, 1, tzinfo=UTC), 2) == [
        "2027-02-28",
        "2028-02-28",
    ]
    assert days_of("0 0 15,31,L * *", datetime(2027, 4, 1, tzinfo=UTC), 4) == [
        "2027-04-15",
        "2027-04-30",
        "2027-05-15",
        "2027-05-31",
    ]


def test_last_with_a_restricted_weekday_means_either_day_field() -> None:
    """Both day fields restricted: the last day, or any Friday (the standard OR rule)."""
    got = days_of("0 12 L * fri", datetime(2027, 1, 1, tzinfo=UTC), 6)
    assert got == [
        "2027-01-01",
        "2027-01-08",
        "2027-01-15",
        "2027-01-22",
        "2027-01-29",
        "2027-01-31",
    ]


def test_last_with_a_weekday_field_starting_with_star_means_both() -> None:
    """``*/2`` in day-of-week starts with ``*``: the last day, only on Sun/Tue/Thu/Sat."""
    got = days_of("0 12 L * */2", datetime(2027, 1, 1, tzinfo=UTC), 3)
    assert got == ["2027-01-31", "2027-02-28", "2027-07-31"]


def test_last_on_a_spring_forward_day_fires_at_the_transition() -> None:
    """Sunday 31 March 2024 in London: 01:30 does not exist; fixed-time fires at 02:00 BST."""
    got = list(islice(cron_instants("30 1 L * *", ZoneInfo("Europe/London"), _at(2024, 3, 30)), 1))
    assert got == [datetime(2024, 3, 31, 1, 0, tzinfo=UTC)]


def test_last_on_a_fall_back_day_fires_once_fixed_and_twice_wildcard() -> None:
    """Sunday 31 October 2027 in London: 01:00-02:00 happens twice."""
    london = ZoneInfo("Europe/London")
    fixed = list(islice(cron_instants("30 1 L * *", london, _at(2027, 10, 30)), 2))
    assert fixed == [
        datetime(2027, 10, 31, 0, 30, tzinfo=UTC),
        datetime(2027, 11, 30, 1, 30, tzinfo=UTC),
    ]
    wildcard = list(islice(cron_instants("*/30 1 L * *", london, _at(2027, 10, 30)), 4))
    assert [t.strftime("%H:%M") for t in wildcard] == ["00:00", "00:30", "01:00", "01:30"]


def _at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


# --- Property: the engine's days equal a plain walk over every day of the span.

DAY_ELEMENTS = st.one_of(
    st.integers(1, 31).map(str),
    st.tuples(st.integers(1, 31), st.integers(1, 30)).map(
        lambda p: f"{p[0]}-{min(31, p[0] + p[1])}" if p[0] < 31 else "31"
    ),
)
DOM = st.tuples(st.lists(DAY_ELEMENTS, max_size=2), st.integers(0, 2)).map(
    lambda p: ",".join([*p[0][: p[1]], "L", *p[0][p[1] :]])
)
MONTHS = st.one_of(
    st.just("*"),
    st.lists(st.integers(1, 12), min_size=1, max_size=4, unique=True).map(
        lambda ms: ",".join(map(str, sorted(ms)))
    ),
)
DOW = st.sampled_from(["*", "*/2", "1-5", "fri", "0,6", "sun"])


def walk(dom: str, months: str, dow: str, start: date, end: date) -> list[date]:
    """Every day in [start, end) matching the day fields, by the rules, one day at a time."""
    listed: set[int] = set()
    for element in dom.split(","):
        if element != "L":
            low, _, high = element.partition("-")
            listed.update(range(int(low), int(high or low) + 1))
    month_set = set(range(1, 13)) if months == "*" else {int(m) for m in months.split(",")}
    names = {"fri": "5", "sun": "0"}
    weekdays: set[int] = set()
    for element in names.get(dow, dow).split(","):
        body, _, step = element.partition("/")
        low, high = (0, 6) if body == "*" else map(int, (body.split("-") * 2)[:2])
        weekdays.update(range(low, high + 1, int(step or 1)))
    found, day = [], start
    while day < end:
        last = day.day == calendar.monthrange(day.year, day.month)[1]
        in_dom = day.day in listed or ("L" in dom.split(",") and last)
        in_dow = day.isoweekday() % 7 in weekdays
        both = dow.startswith("*")
        if day.month in month_set and ((in_dom and in_dow) if both else (in_dom or in_dow)):
            found.append(day)
        day += timedelta(days=1)
    return found


@settings(max_examples=200, deadline=None)
@given(DOM, MONTHS, DOW, st.integers(1999, 2101), st.sampled_from(["UTC", "Europe/London"]))
def test_last_matches_a_brute_force_day_walk(
    dom: str, months: str, dow: str, year: int, zone_name: str
) -> None:
    zone = ZoneInfo(zone_name)
    start, end = date(year, 1, 1), date(year + 2, 1, 1)
    after = datetime(year, 1, 1, tzinfo=zone) - timedelta(microseconds=1)
    until = datetime(end.year, 1, 1, tzinfo=zone)
    expr = f"0 12 {dom} {months} {dow}"
    got = [
        t.astimezone(zone).date()
        for t in takewhile(lambda t: t < until, cron_instants(expr, zone, after))
    ]
    assert got == walk(dom, months, dow, start, end)
