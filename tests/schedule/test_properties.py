"""Properties of spec occurrences, checked against a brute-force oracle written from the rules.

The oracle below shares no code with django_cadence.schedule.cron: it expands fields with
plain range arithmetic and walks real time minute by minute, applying the DST rules of
docs/design.md directly.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import pairwise, takewhile
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from django_cadence.schedule.cron_syntax import parse_cron
from django_cadence.schedule.specs import Spec, count_between, occurrences, upcoming

SETTINGS = settings(max_examples=150, deadline=None)

ZONES = [
    "America/New_York",
    "Europe/Dublin",
    "Australia/Lord_Howe",
    "America/Santiago",
    "UTC",
    "Asia/Kolkata",
    "Pacific/Chatham",
]
EXPRESSIONS = [
    "* * * * *",
    "*/15 * * * *",
    "*/7 1-3 * * *",
    "0 * * * *",
    "30 * * * *",
    "0 */2 * * *",
    "@hourly",
    "30 2 * * *",
    "0 1-3 * * *",
    "30 1 * * *",
    "45 1 * * *",
    "0,15,30,45 2 * * *",
    "15,45 0-3 * * *",
    "0 0 * * *",
    "30 0 * * *",
    "30 23 * * *",
    "59 23 * * *",
    "@daily",
    "0 2 * * 0",
    "0 0 1 * *",
    "0 9 * * mon-fri",
    "0 0 13 * 5",
    "0 0 */2 * 1",
    "5 1 * 3,4,9,10,11 *",
    "0 0 29 2 *",
    "30 1 L * *",
    "*/20 1-2 L * *",
    "0 2 15,L * *",
    "0 0 L * 0",
    "30 2 L 2,3,10 *",
]
MINUTE = timedelta(minutes=1)
START, END = datetime(2020, 1, 1, tzinfo=UTC), datetime(2030, 12, 31, tzinfo=UTC)

# --- The oracle: field expansion and matching straight from the cron rules.

RANGES = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
LAST = 0  # stands for 'L' (the month's last day) in the day-of-month set
NAMES = {
    3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
}
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _value(index: int, token: str) -> int:
    if token.isdigit():
        return int(token)
    return NAMES[index].index(token) + (1 if index == 3 else 0)


@cache
def oracle(expr: str) -> tuple[list[frozenset[int]], bool, bool]:
    """(sets, both day fields must match, fixed-time) for a valid expression."""
    fields = MACROS.get(expr.lower(), expr.lower()).split()
    sets = []
    for index, field in enumerate(fields):
        values: set[int] = set()
        for element in field.split(","):
            if index == 2 and element == "l":
                values.add(LAST)
                continue
            body, _, step = element.partition("/")
            if body == "*":
                low, high = RANGES[index]
            elif "-" in body:
                first, last = body.split("-")
                low, high = _value(index, first), _value(index, last)
                if index == 4 and last == "sun" and low > 0:
                    high = 7
            else:
                low = high = _value(index, body)
            values.update(range(low, high + 1, int(step or 1)))
        sets.append(frozenset(v % 7 for v in values) if index == 4 else frozenset(values))
    both = fields[2].startswith("*") or fields[4].startswith("*")
    fixed = not (fields[0].startswith("*") or fields[1].startswith("*"))
    return sets, both, fixed


def wall_matches(expr: str, wall: datetime) -> bool:
    sets, both, _ = oracle(expr)
    if wall.second or wall.microsecond:
        return False
    if wall.minute not in sets[0] or wall.hour not in sets[1] or wall.month not in sets[3]:
        return False
    last = (wall + timedelta(days=1)).month != wall.month
    dom = wall.day in sets[2] or (last and LAST in sets[2])
    dow = wall.isoweekday() % 7 in sets[4]
    return (dom and dow) if both else (dom or dow)


def offset(zone: ZoneInfo, instant: datetime) -> timedelta:
    result = instant.astimezone(zone).utcoffset()
    assert result is not None
    return result


def is_ambiguous(zone: ZoneInfo, wall: datetime) -> bool:
    return (
        wall.replace(tzinfo=zone, fold=0).utcoffset()
        != wall.replace(tzinfo=zone, fold=1).utcoffset()
    )


def gap_walls(zone: ZoneInfo, instant: datetime) -> list[datetime]:
    """The wall minutes skipped by a spring-forward at ``instant`` (empty if it is not one)."""
    before, after = offset(zone, instant - MINUTE), offset(zone, instant)
    if after <= before:
        return []
    end = (instant + after).replace(tzinfo=None)
    return [end - MINUTE * k for k in range(1, (after - before) // MINUTE + 1)]


def gap_matches(expr: str, zone: ZoneInfo, instant: datetime) -> bool:
    return any(wall_matches(expr, wall) for wall in gap_walls(zone, instant))


def brute_force(expr: str, zone: ZoneInfo, after: datetime, until: datetime) -> list[datetime]:
    """Every instant in (after, until], by walking real time one minute at a time."""
    _, _, fixed = oracle(expr)
    found = []
    instant = after.replace(second=0, microsecond=0) + MINUTE
    previous = offset(zone, instant - MINUTE)
    while instant <= until:
        local = instant.astimezone(zone)
        wall = local.replace(tzinfo=None)
        if wall_matches(expr, wall):
            # Fixed-time: a repeated wall time fires only on its first pass.
            if not (fixed and local.fold == 1 and is_ambiguous(zone, wall)):
                found.append(instant)
        elif fixed and local.utcoffset() != previous and gap_matches(expr, zone, instant):
            found.append(instant)  # the transition stands in for the skipped slots
        previous = local.utcoffset()
        instant += MINUTE
    return found


# --- Strategies: uniform instants, and instants near each zone's transitions.


@cache
def transitions(zone_name: str) -> list[datetime]:
    zone, found = ZoneInfo(zone_name), []
    day = START
    while day < END:
        if offset(zone, day) != offset(zone, day + timedelta(days=1)):
            low, high = day, day + timedelta(days=1)
            while high - low > MINUTE:
                middle = low + (high - low) / 2
                if offset(zone, middle) == offset(zone, low):
                    low = middle
                else:
                    high = middle
            found.append(high.replace(second=0, microsecond=0))
        day += timedelta(days=1)
    return found


uniform_instants = st.datetimes(
    min_value=START.replace(tzinfo=None),
    max_value=END.replace(tzinfo=None),
    timezones=st.just(UTC),
)


@st.composite
def zone_and_after(draw: st.DrawFn) -> tuple[ZoneInfo, datetime]:
    name = draw(st.sampled_from(ZONES))
    near = transitions(name)
    if near and draw(st.booleans()):
        centre = draw(st.sampled_from(near))
        seconds = draw(st.integers(-30 * 3600, 6 * 3600))
        return ZoneInfo(name), centre + timedelta(seconds=seconds)
    return ZoneInfo(name), draw(uniform_instants)


def cron_spec(expr: str, zone: ZoneInfo) -> Spec:
    return Spec(kind="cron", cron=expr, timezone=zone.key)


# --- Cron properties.


@SETTINGS
@given(st.sampled_from(EXPRESSIONS), zone_and_after())
def test_cron_matches_the_brute_force_oracle(expr: str, zone_after: tuple) -> None:
    zone, after = zone_after
    until = after + timedelta(days=1, hours=12)
    got = list(takewhile(lambda t: t <= until, occurrences(cron_spec(expr, zone), after)))
    assert got == brute_force(expr, zone, after, until)


@SETTINGS
@given(st.sampled_from(EXPRESSIONS), zone_and_after(), st.integers(2, 12))
def test_upcoming_is_strictly_increasing_and_utc(expr: str, zone_after: tuple, n: int) -> None:
    zone, after = zone_after
    got = upcoming(cron_spec(expr, zone), n, after)
    assert len(got) == n
    assert got[0] > after
    assert all(a < b for a, b in pairwise(got))
    assert all(t.tzinfo is UTC for t in got)


@SETTINGS
@given(st.sampled_from(EXPRESSIONS), zone_and_after(), st.integers(2, 10), st.data())
def test_occurrences_do_not_depend_on_where_you_ask(
    expr: str, zone_after: tuple, n: int, data: st.DataObject
) -> None:
    zone, after = zone_after
    spec = cron_spec(expr, zone)
    got = upcoming(spec, n, after)
    for i in range(1, n):
        assert upcoming(spec, n - i, got[i - 1]) == got[i:]
    earlier = after - timedelta(seconds=data.draw(st.integers(0, 3 * 86400), label="earlier"))
    window = takewhile(lambda t: t <= got[-1], occurrences(spec, earlier))
    assert [t for t in window if t > after] == got


@SETTINGS
@given(st.sampled_from(EXPRESSIONS), zone_and_after())
def test_every_instant_matches_or_is_a_gap_substitution(expr: str, zone_after: tuple) -> None:
    zone, after = zone_after
    _, _, fixed = oracle(expr)
    for instant in upcoming(cron_spec(expr, zone), 8, after):
        local = instant.astimezone(zone)
        if wall_matches(expr, local.replace(tzinfo=None)):
            continue
        assert fixed, f"{instant} does not match {expr!r} in {zone.key}"
        assert gap_matches(expr, zone, instant), instant


@SETTINGS
@given(st.sampled_from([e for e in EXPRESSIONS if oracle(e)[2]]), zone_and_after())
def test_fixed_time_never_fires_twice_for_one_wall_slot(expr: str, zone_after: tuple) -> None:
    zone, after = zone_after
    got = upcoming(cron_spec(expr, zone), 12, after)
    walls = [t.astimezone(zone).replace(tzinfo=None) for t in got]
    assert len(set(walls)) == len(walls)


# --- Field expansion: croniter (behind our canonicalisation) agrees with the plain rules.


@st.composite
def field_text(draw: st.DrawFn, index: int) -> str:
    low, high = RANGES[index]
    elements = ["L"] if index == 2 and draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["star", "value", "range"]))
        step = draw(st.integers(1, high - low + 1))
        if kind == "star":
            elements.append("*" if draw(st.booleans()) else f"*/{step}")
        elif kind == "value":
            elements.append(str(draw(st.integers(low, high))))
        else:
            first = draw(st.integers(low, high))
            last = draw(st.integers(first, high))
            elements.append(f"{first}-{last}" + (f"/{step}" if draw(st.booleans()) else ""))
    return ",".join(elements)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4).flatmap(lambda i: st.tuples(st.just(i), field_text(i))))
def test_field_expansion_matches_the_rules(index_and_text: tuple[int, str]) -> None:
    index, text = index_and_text
    fields = ["0", "0", "*", "*", "*"]
    fields[index] = text
    expr = " ".join(fields)
    parsed = parse_cron(expr)
    got = [
        set(parsed.minutes),
        set(parsed.hours),
        set(parsed.days) | ({LAST} if parsed.last_day else set()),
        set(parsed.months),
        set(parsed.weekdays),
    ]
    assert got[index] == set(oracle(expr)[0][index])


# --- Interval properties.

micros = st.integers(1, 10 * 86400 * 10**6)


@SETTINGS
@given(micros, uniform_instants, uniform_instants, st.booleans(), st.integers(1, 20))
def test_intervals_are_exactly_one_interval_apart(
    step: int, anchor: datetime, after: datetime, use_start_at: bool, n: int
) -> None:
    interval = timedelta(microseconds=step)
    spec = Spec(
        kind="interval",
        interval=interval,
        start_at=anchor if use_start_at else None,
        anchor=None if use_start_at else anchor,
    )
    got = upcoming(spec, n, after)
    assert len(got) == n
    assert all(b - a == interval for a, b in pairwise(got))
    first_k = 0 if use_start_at else 1
    assert got[0] > after
    assert got[0] >= anchor + first_k * interval
    assert (got[0] - anchor) % interval == timedelta(0)
    assert got[0] - interval <= after or got[0] == anchor + first_k * interval


@SETTINGS
@given(
    st.integers(1, 3600),
    uniform_instants,
    st.integers(-7200, 7200),
    st.integers(0, 7200),
    st.one_of(st.none(), st.integers(0, 7200)),
    st.one_of(st.none(), st.integers(0, 40)),
    st.integers(0, 5),
)
def test_count_between_matches_iteration(
    seconds: int,
    anchor: datetime,
    after_offset: int,
    length: int,
    end_offset: int | None,
    max_occurrences: int | None,
    spent: int,
) -> None:
    spec = Spec(
        kind="interval",
        interval=timedelta(seconds=seconds),
        anchor=anchor,
        end_at=None if end_offset is None else anchor + timedelta(seconds=end_offset),
        max_occurrences=max_occurrences,
        occurrence_count=spent,
    )
    after = anchor + timedelta(seconds=after_offset)
    until = after + timedelta(seconds=length)
    expected = 0
    for instant in occurrences(spec, after):
        if instant > until:
            break
        expected += 1
    assert count_between(spec, after, until) == expected
