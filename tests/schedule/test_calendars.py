"""Business calendars in the schedule math: rules, skip, shift, bounds, DST, and a brute-force
reference that walks days one by one."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import islice, takewhile
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from django_cadence.exceptions import InvalidSpec
from django_cadence.schedule.calendars import CalendarSet, parse_rules, resolve
from django_cadence.schedule.specs import Spec, excluded_runs, occurrences, upcoming

LONDON = ZoneInfo("Europe/London")


def calendar_set(*rules):
    return CalendarSet(tuple(rules))


def rules(name="cal", mode="exclude", zone=UTC, **kwargs):
    return parse_rules(name, mode, kwargs, ZoneInfo("UTC") if zone is UTC else zone)


WEEKENDS = rules("weekends", weekdays=["sat", "sun"])
XMAS = rules("uk-bank-holidays", yearly=["12-25", "12-26"])


def daily(at="0 9 * * *", zone="Europe/London", **kwargs):
    return Spec(kind="cron", cron=at, timezone=zone, **kwargs)


def test_the_last_day_skipped_or_shifted_under_weekends():
    """``L`` under weekends: skip loses the months that end on a weekend; previous and next
    move them to the Friday before or the Monday after (January 2027 ends on a Sunday)."""
    after = datetime(2027, 1, 1, tzinfo=UTC)
    got = {
        shift: [g.astimezone(LONDON).date().isoformat() for g in upcoming(spec, 3, after)]
        for shift in ("skip", "previous", "next")
        for spec in [daily("0 18 L * *", calendars=calendar_set(WEEKENDS), shift=shift)]
    }
    assert got == {
        "skip": ["2027-03-31", "2027-04-30", "2027-05-31"],
        "previous": ["2027-01-29", "2027-02-26", "2027-03-31"],
        "next": ["2027-02-01", "2027-03-01", "2027-03-31"],
    }


def test_skip_leaves_out_excluded_days():
    spec = daily(calendars=calendar_set(WEEKENDS, XMAS))
    got = upcoming(spec, 4, datetime(2026, 12, 23, 12, tzinfo=UTC))
    # 24 Thu, 25 Fri (holiday), 26-27 weekend, 28 Mon
    assert [g.date() for g in got] == [
        date(2026, 12, 24),
        date(2026, 12, 28),
        date(2026, 12, 29),
        date(2026, 12, 30),
    ]


def test_shift_next_moves_to_the_next_included_day_at_the_same_wall_time():
    # The first of the month, or the first working day after it.
    spec = daily("0 9 1 * *", calendars=calendar_set(WEEKENDS), shift="next")
    got = upcoming(spec, 3, datetime(2026, 7, 15, tzinfo=UTC))
    # 1 Aug 2026 is a Saturday -> Monday 3 Aug; 1 Sep Tue; 1 Nov Sunday -> 2 Nov (GMT again)
    local = [g.astimezone(LONDON) for g in got]
    assert [d.date() for d in local] == [date(2026, 8, 3), date(2026, 9, 1), date(2026, 10, 1)]
    assert all(d.hour == 9 for d in local)


def test_shift_previous_moves_back_and_merges_collisions():
    spec = daily(calendars=calendar_set(WEEKENDS), shift="previous")
    got = upcoming(spec, 3, datetime(2026, 12, 3, 12, tzinfo=UTC))  # Thursday noon
    # Fri 4 (its own, and Sat/Sun shifted onto it: once), Mon 7, Tue 8
    assert [g.date() for g in got] == [date(2026, 12, 4), date(2026, 12, 7), date(2026, 12, 8)]


def test_shift_lands_on_a_valid_local_time_across_dst():
    # 01:30 on Sunday 29 March 2026 does not exist in London; Saturday 28 March is excluded,
    # so its 01:30 shifts next into the gap and lands as far past it (02:30 BST).
    sat = rules("sat", dates=["2026-03-28"])
    spec = daily("30 1 28 3 *", calendars=calendar_set(sat), shift="next")
    (got,) = upcoming(spec, 1, datetime(2026, 3, 1, tzinfo=UTC))
    assert got == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    assert got.astimezone(LONDON).hour == 2


def test_max_occurrences_counts_only_included():
    spec = daily(calendars=calendar_set(WEEKENDS), max_occurrences=5)
    got = list(occurrences(spec, datetime(2026, 12, 4, 12, tzinfo=UTC)))  # Friday noon
    assert len(got) == 5
    assert all(g.weekday() < 5 for g in got)


def test_freeze_window_excludes_instants_not_whole_days():
    freeze = rules("freeze", freezes=[["2026-12-01T10:00:00Z", "2026-12-01T12:00:00Z"]])
    spec = Spec(
        kind="interval",
        interval=timedelta(hours=1),
        start_at=datetime(2026, 12, 1, tzinfo=UTC),
        calendars=calendar_set(freeze),
    )
    got = upcoming(spec, 4, datetime(2026, 12, 1, 8, 30, tzinfo=UTC))
    assert [g.hour for g in got] == [9, 12, 13, 14]


def test_only_mode_includes_just_the_listed_days():
    only = rules("month-end-run", mode="only", dates=["2026-12-31", "2027-01-29"])
    got = upcoming(daily(calendars=calendar_set(only)), 3, datetime(2026, 12, 1, tzinfo=UTC))
    assert [g.date() for g in got] == [date(2026, 12, 31), date(2027, 1, 29)]


def test_a_calendar_excluding_every_day_yields_nothing_within_the_lookahead():
    every = rules("never", weekdays=["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
    assert upcoming(daily(calendars=calendar_set(every)), 1, datetime(2026, 1, 1, tzinfo=UTC)) == []
    spec = daily(calendars=calendar_set(every), shift="next")
    assert upcoming(spec, 1, datetime(2026, 1, 1, tzinfo=UTC)) == []


def test_excluded_runs_group_consecutive_instants_by_calendar():
    spec = daily(calendars=calendar_set(XMAS, WEEKENDS))
    runs = excluded_runs(spec, datetime(2026, 12, 20, tzinfo=UTC), datetime(2027, 1, 4, tzinfo=UTC))
    assert [(r.calendar, r.first.date(), r.count) for r in runs] == [
        ("weekends", date(2026, 12, 20), 1),
        ("uk-bank-holidays", date(2026, 12, 25), 2),
        ("weekends", date(2026, 12, 27), 1),
        ("weekends", date(2027, 1, 2), 2),
    ]


def test_base_calendar_adds_its_exclusions_and_cycles_are_refused():
    rows = {
        "uk": (None, parse_rules("uk", "exclude", {"yearly": ["12-25"]}, LONDON)),
        "acme": ("uk", parse_rules("acme", "exclude", {"dates": ["2026-12-24"]}, LONDON)),
    }
    acme = resolve("acme", rows)
    assert acme.excludes_day(date(2026, 12, 25))
    assert acme.excludes_day(date(2026, 12, 24))
    assert not acme.excludes_day(date(2026, 12, 23))
    rows["uk"] = ("acme", rows["uk"][1])
    with pytest.raises(InvalidSpec, match="circular bases acme -> uk -> acme"):
        resolve("acme", rows)
    with pytest.raises(InvalidSpec, match="Unknown calendar 'nope'"):
        resolve("nope", rows)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"dates": ["2026-02-30"]}, r"rules.dates: '2026-02-30' is not a date"),
        ({"yearly": ["13-01"]}, r"rules.yearly: '13-01' is not a month and day"),
        ({"weekdays": ["someday"]}, r"rules.weekdays: 'someday' is not a weekday"),
        ({"date_ranges": [["2026-02-02", "2026-02-01"]]}, r"ends before it starts"),
        ({"freezes": [["soon", "later"]]}, r"rules.freezes: 'soon' is not an ISO 8601"),
        ({"holydays": []}, r"rules: unknown key 'holydays'"),
        ({"dates": "2026-01-01"}, r"rules.dates: must be a list"),
    ],
)
def test_invalid_rules_name_the_rule(given, message):
    with pytest.raises(InvalidSpec, match=message):
        parse_rules("c", "exclude", given, LONDON)


# --- brute-force reference ---------------------------------------------------------------

ZONES = ["Europe/London", "America/New_York", "UTC", "Australia/Lord_Howe"]
CRONS = ["0 9 * * *", "30 2 * * *", "15 */6 * * *", "0 9 1 * *", "0 12 * * 1-5", "45 1 * * 0"]
CRONS += ["0 18 L * *", "30 1 L * *", "0 9 15,L * *", "0 12 L * fri"]


def _reference(raw, cal, zone, shift, after):
    """Walk days one at a time: no jumps, no heap, no lookback."""
    out = set()
    for r in raw:
        local = r.astimezone(zone)
        if cal.day_reason(local.date()) is None and cal.frozen(r) is None:
            out.add(r)
            continue
        if shift == "skip":
            continue
        step = timedelta(days=1 if shift == "next" else -1)
        day = local.date()
        for _ in range(400):
            day += step
            moved = datetime.combine(day, local.time().replace(fold=0), tzinfo=zone).astimezone(UTC)
            if cal.day_reason(day) is None and cal.frozen(moved) is None:
                out.add(moved)
                break
    return sorted(x for x in out if x > after)


@settings(max_examples=25, deadline=None)
@given(
    cron=st.sampled_from(CRONS),
    zone=st.sampled_from(ZONES),
    weekdays=st.sets(st.integers(0, 6), max_size=5),
    offsets=st.sets(st.integers(0, 120), max_size=20),
    shift=st.sampled_from(["skip", "previous", "next"]),
    start=st.integers(0, 300),
)
def test_matches_brute_force(cron, zone, weekdays, offsets, shift, start):
    base = date(2026, 1, 1)
    names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    cal = calendar_set(
        parse_rules(
            "c",
            "exclude",
            {
                "weekdays": [names[w] for w in weekdays],
                "dates": [(base + timedelta(days=start + o)).isoformat() for o in offsets],
            },
            ZoneInfo(zone),
        )
    )
    after = datetime.combine(base + timedelta(days=start), datetime.min.time(), tzinfo=UTC)
    spec = Spec(kind="cron", cron=cron, timezone=zone, calendars=cal, shift=shift)
    plain = Spec(kind="cron", cron=cron, timezone=zone)
    horizon = after + timedelta(days=100)
    raw = list(takewhile(lambda r: r <= horizon, occurrences(plain, after - timedelta(days=30))))
    expected = [
        x
        for x in _reference(raw, cal, ZoneInfo(zone), shift, after)
        if x <= after + timedelta(days=60)
    ]
    got = list(
        takewhile(lambda r: r <= after + timedelta(days=60), islice(occurrences(spec, after), 1000))
    )
    assert got == expected


def test_max_silence_counts_included_days_only():
    from django_cadence.schedule.silence import overdue_at

    spec = daily(calendars=calendar_set(WEEKENDS))
    friday = datetime(2026, 12, 4, 9, tzinfo=UTC)
    deadline = overdue_at(spec, friday, max_silence=timedelta(days=1), ladder=timedelta(0))
    assert deadline == datetime(2026, 12, 7, 9, tzinfo=UTC)  # Monday, not Saturday
    plain = daily()
    assert overdue_at(plain, friday, max_silence=timedelta(days=1), ladder=timedelta(0)) == (
        datetime(2026, 12, 5, 9, tzinfo=UTC)
    )


def test_without_max_silence_the_rule_under_its_calendars_decides():
    from django_cadence.schedule.silence import overdue_at

    spec = daily(calendars=calendar_set(WEEKENDS))
    friday = datetime(2026, 12, 4, 9, tzinfo=UTC)
    # the second included occurrence after Friday's success: Tuesday
    assert overdue_at(spec, friday, max_silence=None, ladder=timedelta(0)) == datetime(
        2026, 12, 8, 9, tzinfo=UTC
    )


def test_a_calendar_seeded_with_a_countrys_public_holidays():
    pytest.importorskip("holidays")
    england = rules("uk", holidays={"country": "GB", "subdiv": "ENG"})
    spec = daily(calendars=calendar_set(england, WEEKENDS))
    got = upcoming(spec, 2, datetime(2026, 12, 24, 12, tzinfo=UTC))
    # 25 Christmas, 26-27 weekend, 28 Boxing Day (observed): the 29th is next
    assert [g.date() for g in got] == [date(2026, 12, 29), date(2026, 12, 30)]


def test_an_unknown_country_is_refused_naming_the_rule():
    pytest.importorskip("holidays")
    with pytest.raises(InvalidSpec, match=r"rules\.holidays: Country XX not available"):
        rules("x", holidays={"country": "XX"})


def test_without_the_holidays_package_the_message_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "holidays", None)  # import holidays -> ImportError
    with pytest.raises(InvalidSpec, match=r"django-cadence\[holidays\]"):
        rules("uk", holidays={"country": "GB"})
