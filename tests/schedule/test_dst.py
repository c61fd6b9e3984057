"""Cron instants across real DST transitions, checked by hand against the zones' rules.

Transitions used (tzdata; derived from the published rules, not from the code under test):

* America/New_York: 2026-03-08 07:00Z EST-5 -> EDT-4 (gap 02:00-03:00);
  2026-11-01 06:00Z EDT-4 -> EST-5 (fold 01:00-02:00: first pass 05:00-06:00Z, second 06:00-07:00Z).
* Europe/Dublin (negative DST: winter GMT+0 is the "standard" side in tzdata's IST model):
  2026-03-29 01:00Z +0 -> +1 (gap 01:00-02:00); 2026-10-25 01:00Z +1 -> +0 (fold 01:00-02:00:
  first pass 00:00-01:00Z, second 01:00-02:00Z).
* Australia/Lord_Howe (30-minute shift): 2026-04-04 15:00Z +11 -> +10:30 (fold 01:30-02:00 on
  04-05: first pass 14:30-15:00Z, second 15:00-15:30Z); 2026-10-03 15:30Z +10:30 -> +11
  (gap 02:00-02:30 on 10-04).
* America/Santiago: 2026-04-05 03:00Z -3 -> -4 (fold 23:00-24:00 on Saturday 04-04: first pass
  02:00-03:00Z, second 03:00-04:00Z); 2026-09-06 04:00Z -4 -> -3 (gap 00:00-01:00: midnight
  does not exist on 09-06).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice, pairwise
from zoneinfo import ZoneInfo

import pytest

from django_cadence.schedule.specs import Spec, cron_instants, upcoming


def z(month: int, day: int, hour: int, minute: int = 0, year: int = 2026) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


NY, DUBLIN, LORD_HOWE, SANTIAGO = (
    "America/New_York",
    "Europe/Dublin",
    "Australia/Lord_Howe",
    "America/Santiago",
)

CASES = [
    # --- New York, spring forward: 02:00-03:00 local does not exist on 2026-03-08.
    pytest.param(
        NY, "30 2 * * *", z(3, 7, 12), [z(3, 8, 7), z(3, 9, 6, 30)], id="ny-spring-fixed-gap-slot"
    ),
    pytest.param(
        NY,
        "30 2 * * *",
        z(3, 8, 7),
        [z(3, 9, 6, 30)],
        id="ny-spring-fixed-asked-at-transition",
    ),
    pytest.param(
        NY,
        "0 1-3 * * *",
        z(3, 8, 0),
        # 01:00 EST; 02:00 (gap) -> 03:00 EDT, same instant as the 03:00 slot: one firing.
        [z(3, 8, 6), z(3, 8, 7), z(3, 9, 5), z(3, 9, 6), z(3, 9, 7)],
        id="ny-spring-fixed-range-dedupes-transition",
    ),
    pytest.param(
        NY,
        "*/15 * * * *",
        z(3, 8, 6, 30),
        [z(3, 8, 6, 45), z(3, 8, 7), z(3, 8, 7, 15)],
        id="ny-spring-wildcard-skips-gap",
    ),
    pytest.param(
        NY,
        "0 * * * *",
        z(3, 8, 5, 30),
        [z(3, 8, 6), z(3, 8, 7), z(3, 8, 8)],
        id="ny-spring-hourly-skips-gap",
    ),
    pytest.param(
        NY,
        "30 * * * *",
        z(3, 8, 6),
        # 02:30 does not happen; a wildcard does not substitute the transition for it.
        [z(3, 8, 6, 30), z(3, 8, 7, 30)],
        id="ny-spring-wildcard-half-past-no-substitution",
    ),
    pytest.param(
        NY,
        "30 2 * * *",
        z(3, 6, 12),
        [z(3, 7, 7, 30), z(3, 8, 7), z(3, 9, 6, 30)],
        id="ny-spring-fixed-day-before",
    ),
    # --- New York, fall back: 01:00-02:00 local happens twice on 2026-11-01.
    pytest.param(
        NY, "30 1 * * *", z(10, 31, 12), [z(11, 1, 5, 30), z(11, 2, 6, 30)], id="ny-fold-fixed"
    ),
    pytest.param(
        NY,
        "30 1 * * *",
        z(11, 1, 5, 10),
        [z(11, 1, 5, 30), z(11, 2, 6, 30)],
        id="ny-fold-fixed-from-first-pass",
    ),
    pytest.param(
        NY,
        "30 1 * * *",
        z(11, 1, 5, 45),
        [z(11, 2, 6, 30)],
        id="ny-fold-fixed-first-pass-after-slot",
    ),
    pytest.param(
        NY,
        "30 1 * * *",
        z(11, 1, 6, 10),
        [z(11, 2, 6, 30)],
        id="ny-fold-fixed-from-second-pass",
    ),
    pytest.param(
        NY,
        "0 1-3 * * *",
        z(11, 1, 4),
        [z(11, 1, 5), z(11, 1, 7), z(11, 1, 8)],
        id="ny-fold-fixed-range",
    ),
    pytest.param(
        NY,
        "*/15 * * * *",
        z(11, 1, 5, 30),
        [
            z(11, 1, 5, 45),
            z(11, 1, 6),
            z(11, 1, 6, 15),
            z(11, 1, 6, 30),
            z(11, 1, 6, 45),
            z(11, 1, 7),
        ],
        id="ny-fold-wildcard-fires-twice",
    ),
    pytest.param(
        NY,
        "*/15 * * * *",
        z(11, 1, 5, 50),
        [z(11, 1, 6), z(11, 1, 6, 15)],
        id="ny-fold-wildcard-from-end-of-first-pass",
    ),
    pytest.param(
        NY,
        "*/15 * * * *",
        z(11, 1, 6, 20),
        [z(11, 1, 6, 30), z(11, 1, 6, 45), z(11, 1, 7)],
        id="ny-fold-wildcard-from-second-pass",
    ),
    pytest.param(
        NY,
        "0 * * * *",
        z(11, 1, 4, 30),
        [z(11, 1, 5), z(11, 1, 6), z(11, 1, 7)],
        id="ny-fold-hourly-fires-twice",
    ),
    pytest.param(
        NY,
        "30 1 * * *",
        z(11, 1, 5, 30),
        [z(11, 2, 6, 30)],
        id="ny-fold-fixed-asked-at-the-instant",
    ),
    # --- Dublin, spring: 01:00-02:00 local does not exist on 2026-03-29.
    pytest.param(
        DUBLIN,
        "30 1 * * *",
        z(3, 28, 12),
        [z(3, 29, 1), z(3, 30, 0, 30)],
        id="dublin-spring-fixed-gap-slot",
    ),
    pytest.param(
        DUBLIN,
        "0 1-3 * * *",
        z(3, 29, 0),
        [z(3, 29, 1), z(3, 29, 2), z(3, 30, 0), z(3, 30, 1)],
        id="dublin-spring-fixed-range",
    ),
    pytest.param(
        DUBLIN,
        "*/15 * * * *",
        z(3, 29, 0, 30),
        [z(3, 29, 0, 45), z(3, 29, 1), z(3, 29, 1, 15)],
        id="dublin-spring-wildcard",
    ),
    pytest.param(
        DUBLIN,
        "0 * * * *",
        z(3, 28, 23, 30),
        [z(3, 29, 0), z(3, 29, 1), z(3, 29, 2)],
        id="dublin-spring-hourly",
    ),
    # --- Dublin, autumn: 01:00-02:00 local happens twice on 2026-10-25.
    pytest.param(
        DUBLIN,
        "30 1 * * *",
        z(10, 24, 12),
        [z(10, 25, 0, 30), z(10, 26, 1, 30)],
        id="dublin-fold-fixed",
    ),
    pytest.param(
        DUBLIN,
        "30 1 * * *",
        z(10, 25, 1, 10),
        [z(10, 26, 1, 30)],
        id="dublin-fold-fixed-from-second-pass",
    ),
    pytest.param(
        DUBLIN,
        "*/15 * * * *",
        z(10, 25, 0, 30),
        [
            z(10, 25, 0, 45),
            z(10, 25, 1),
            z(10, 25, 1, 15),
            z(10, 25, 1, 30),
            z(10, 25, 1, 45),
            z(10, 25, 2),
        ],
        id="dublin-fold-wildcard",
    ),
    pytest.param(
        DUBLIN,
        "0 * * * *",
        z(10, 24, 23, 30),
        [z(10, 25, 0), z(10, 25, 1), z(10, 25, 2)],
        id="dublin-fold-hourly",
    ),
    # --- Lord Howe, autumn: 01:30-02:00 local happens twice on 2026-04-05 (30-minute shift).
    pytest.param(
        LORD_HOWE,
        "45 1 * * *",
        z(4, 4, 12),
        [z(4, 4, 14, 45), z(4, 5, 15, 15)],
        id="lord-howe-fold-fixed",
    ),
    pytest.param(
        LORD_HOWE,
        "45 1 * * *",
        z(4, 4, 15, 10),
        [z(4, 5, 15, 15)],
        id="lord-howe-fold-fixed-from-second-pass",
    ),
    pytest.param(
        LORD_HOWE,
        "*/15 * * * *",
        z(4, 4, 14, 20),
        [
            z(4, 4, 14, 30),
            z(4, 4, 14, 45),
            z(4, 4, 15),
            z(4, 4, 15, 15),
            z(4, 4, 15, 30),
            z(4, 4, 15, 45),
        ],
        id="lord-howe-fold-wildcard",
    ),
    pytest.param(
        LORD_HOWE,
        "0 * * * *",
        z(4, 4, 13, 30),
        # 01:00 +11 is before the fold; 02:00 +10:30 is 90 real minutes later.
        [z(4, 4, 14), z(4, 4, 15, 30), z(4, 4, 16, 30)],
        id="lord-howe-fold-hourly",
    ),
    # --- Lord Howe, spring: 02:00-02:30 local does not exist on 2026-10-04.
    pytest.param(
        LORD_HOWE,
        "15 2 * * *",
        z(10, 3, 12),
        [z(10, 3, 15, 30), z(10, 4, 15, 15)],
        id="lord-howe-spring-fixed-gap-slot",
    ),
    pytest.param(
        LORD_HOWE,
        "0,15,30 2 * * *",
        z(10, 3, 12),
        # 02:00 and 02:15 are in the gap, 02:30 is the transition: one firing at 15:30Z.
        [z(10, 3, 15, 30), z(10, 4, 15), z(10, 4, 15, 15), z(10, 4, 15, 30)],
        id="lord-howe-spring-fixed-several-gap-slots",
    ),
    pytest.param(
        LORD_HOWE,
        "0 1-3 * * *",
        z(10, 3, 14),
        [z(10, 3, 14, 30), z(10, 3, 15, 30), z(10, 3, 16)],
        id="lord-howe-spring-fixed-range",
    ),
    pytest.param(
        LORD_HOWE,
        "*/15 * * * *",
        z(10, 3, 15, 10),
        [z(10, 3, 15, 15), z(10, 3, 15, 30), z(10, 3, 15, 45)],
        id="lord-howe-spring-wildcard",
    ),
    # --- Santiago, spring: midnight does not exist on Sunday 2026-09-06.
    pytest.param(
        SANTIAGO,
        "0 0 * * *",
        z(9, 4, 12),
        [z(9, 5, 4), z(9, 6, 4), z(9, 7, 3)],
        id="santiago-midnight-gap-fires-at-one",
    ),
    pytest.param(
        SANTIAGO,
        "0 0 * * 0",
        z(9, 1, 0),
        [z(9, 6, 4), z(9, 13, 3)],
        id="santiago-midnight-gap-keeps-the-sunday",
    ),
    pytest.param(
        SANTIAGO,
        "30 0 * * *",
        z(9, 5, 12),
        [z(9, 6, 4), z(9, 7, 3, 30)],
        id="santiago-gap-half-past-midnight",
    ),
    pytest.param(
        SANTIAGO,
        "*/15 * * * *",
        z(9, 6, 3, 30),
        [z(9, 6, 3, 45), z(9, 6, 4), z(9, 6, 4, 15)],
        id="santiago-spring-wildcard",
    ),
    pytest.param(
        SANTIAGO,
        "30 * * * *",
        z(9, 6, 3),
        [z(9, 6, 3, 30), z(9, 6, 4, 30)],
        id="santiago-spring-wildcard-half-past",
    ),
    pytest.param(
        SANTIAGO,
        "0 * * * *",
        z(9, 6, 2, 30),
        [z(9, 6, 3), z(9, 6, 4), z(9, 6, 5)],
        id="santiago-spring-hourly",
    ),
    # --- Santiago, autumn: 23:00-24:00 on Saturday 2026-04-04 happens twice.
    pytest.param(
        SANTIAGO,
        "30 23 * * *",
        z(4, 4, 12),
        [z(4, 5, 2, 30), z(4, 6, 3, 30)],
        id="santiago-fold-fixed",
    ),
    pytest.param(
        SANTIAGO,
        "30 23 * * *",
        z(4, 5, 3, 10),
        [z(4, 6, 3, 30)],
        id="santiago-fold-fixed-from-second-pass",
    ),
    pytest.param(
        SANTIAGO,
        "0 0 * * *",
        z(4, 3, 12),
        [z(4, 4, 3), z(4, 5, 4), z(4, 6, 4)],
        id="santiago-fold-midnight-after-fold",
    ),
    pytest.param(
        SANTIAGO,
        "*/30 * * * *",
        z(4, 5, 1, 50),
        [z(4, 5, 2), z(4, 5, 2, 30), z(4, 5, 3), z(4, 5, 3, 30), z(4, 5, 4)],
        id="santiago-fold-wildcard-across-midnight",
    ),
    pytest.param(
        SANTIAGO,
        "0 * * * *",
        z(4, 5, 1, 30),
        [z(4, 5, 2), z(4, 5, 3), z(4, 5, 4)],
        id="santiago-fold-hourly",
    ),
]


@pytest.mark.parametrize(("zone", "expr", "after", "expected"), CASES)
def test_cron_instants_across_dst(
    zone: str, expr: str, after: datetime, expected: list[datetime]
) -> None:
    got = list(islice(cron_instants(expr, ZoneInfo(zone), after), len(expected)))
    assert got == expected


@pytest.mark.parametrize(("zone", "expr", "after", "expected"), CASES)
def test_upcoming_matches_cron_instants(
    zone: str, expr: str, after: datetime, expected: list[datetime]
) -> None:
    spec = Spec(kind="cron", cron=expr, timezone=zone)
    assert upcoming(spec, len(expected), after) == expected


def test_results_are_utc() -> None:
    got = next(cron_instants("30 2 * * *", ZoneInfo(NY), z(3, 7, 12)))
    assert got.tzinfo is UTC


def test_after_in_another_zone_is_the_same_instant() -> None:
    tokyo = z(11, 1, 5, 50).astimezone(ZoneInfo("Asia/Tokyo"))
    got = list(islice(cron_instants("*/15 * * * *", ZoneInfo(NY), tokyo), 2))
    assert got == [z(11, 1, 6), z(11, 1, 6, 15)]


def test_wildcard_stays_fifteen_real_minutes_apart_through_the_fold() -> None:
    got = list(islice(cron_instants("*/15 * * * *", ZoneInfo(NY), z(11, 1, 4)), 16))
    assert {b - a for a, b in pairwise(got)} == {timedelta(minutes=15)}


def test_large_shift_samoa_skipped_a_whole_day() -> None:
    # Pacific/Apia jumped from 2011-12-29 23:59:59 -10 to 2011-12-31 00:00 +14 (at 10:00Z):
    # 30 December never existed. A fixed-time slot that day fires once, at the transition.
    got = list(
        islice(cron_instants("0 12 * * *", ZoneInfo("Pacific/Apia"), z(12, 29, 0, 0, 2011)), 3)
    )
    assert got == [
        datetime(2011, 12, 29, 22, tzinfo=UTC),  # 12:00 -10 on the 29th
        datetime(2011, 12, 30, 10, tzinfo=UTC),  # the 30th's 12:00 -> transition
        datetime(2011, 12, 30, 22, tzinfo=UTC),  # 12:00 +14 on the 31st
    ]


def test_large_shift_wildcard_skips_the_missing_day() -> None:
    got = list(
        islice(cron_instants("0 * * * *", ZoneInfo("Pacific/Apia"), z(12, 30, 7, 30, 2011)), 3)
    )
    # 22:00 and 23:00 -10 on the 29th, then 00:00 +14 on the 31st (= 10:00Z on the 30th).
    assert got == [
        datetime(2011, 12, 30, 8, tzinfo=UTC),
        datetime(2011, 12, 30, 9, tzinfo=UTC),
        datetime(2011, 12, 30, 10, tzinfo=UTC),
    ]
