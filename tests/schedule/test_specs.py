"""Interval and once specs, the bounds every kind shares, count_between, jitter, time zones."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from itertools import islice
from zoneinfo import ZoneInfo

import pytest

from django_cadence.exceptions import InvalidSpec
from django_cadence.schedule.specs import (
    Spec,
    count_between,
    jitter_delay,
    next_occurrence,
    occurrences,
    upcoming,
    validate_timezone,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def every(seconds: float, **kwargs: object) -> Spec:
    return Spec(kind="interval", interval=timedelta(seconds=seconds), **kwargs)  # type: ignore[arg-type]


# --- Interval anchors.


def test_interval_from_anchor_starts_one_interval_after_creation() -> None:
    spec = every(60, anchor=T0)
    assert upcoming(spec, 3, T0) == [at(60), at(120), at(180)]


def test_interval_from_anchor_never_fires_at_the_anchor_itself() -> None:
    spec = every(60, anchor=T0)
    assert next_occurrence(spec, at(-3600)) == at(60)


def test_interval_from_start_at_fires_at_start_at() -> None:
    spec = every(60, start_at=at(30), anchor=T0)
    assert upcoming(spec, 3, T0) == [at(30), at(90), at(150)]


def test_interval_start_at_wins_over_anchor_even_when_earlier() -> None:
    spec = every(60, start_at=at(-45), anchor=T0)
    assert upcoming(spec, 2, T0) == [at(15), at(75)]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        pytest.param(at(59.999999), at(60), id="just-before"),
        pytest.param(at(60), at(120), id="exactly-on-one-is-strict"),
        pytest.param(at(60.000001), at(120), id="just-after"),
        pytest.param(at(10 * 86400 + 1), at(10 * 86400 + 60), id="far-later"),
    ],
)
def test_interval_next_is_strictly_after(after: datetime, expected: datetime) -> None:
    assert next_occurrence(every(60, anchor=T0), after) == expected


def test_interval_is_exact_over_millions_of_steps() -> None:
    # 1/3 second is not a float-exact step; integer microseconds keep k * step exact.
    step = timedelta(microseconds=333_333)
    spec = Spec(kind="interval", interval=step, anchor=T0)
    k = 9_000_000
    got = upcoming(spec, 2, T0 + step * k)
    assert got == [T0 + step * (k + 1), T0 + step * (k + 2)]


def test_interval_ignores_dst() -> None:
    zone = ZoneInfo("America/New_York")
    start = datetime(2026, 3, 7, 12, tzinfo=zone)  # noon EST, the day before spring forward
    spec = every(86400, start_at=start)
    got = upcoming(spec, 2, start - timedelta(seconds=1))
    assert got == [datetime(2026, 3, 7, 17, tzinfo=UTC), datetime(2026, 3, 8, 17, tzinfo=UTC)]
    assert got[1].astimezone(zone).hour == 13  # 24 real hours later, 13:00 EDT


def test_interval_results_are_utc_even_when_bounds_are_not() -> None:
    plus_five = timezone(timedelta(hours=5))
    spec = every(60, start_at=datetime(2026, 1, 1, 5, tzinfo=plus_five))
    got = next_occurrence(spec, at(-1))
    assert got == T0
    assert got is not None
    assert got.tzinfo is UTC


@pytest.mark.parametrize(
    ("interval", "message"),
    [
        pytest.param(None, "positive interval", id="missing"),
        pytest.param(timedelta(0), "positive interval", id="zero"),
        pytest.param(timedelta(seconds=-1), "positive interval", id="negative"),
    ],
)
def test_interval_must_be_positive(interval: timedelta | None, message: str) -> None:
    spec = Spec(kind="interval", interval=interval, anchor=T0)
    with pytest.raises(InvalidSpec, match=message):
        next_occurrence(spec, T0)


def test_interval_needs_an_anchor_or_start_at() -> None:
    with pytest.raises(ValueError, match="start_at or anchor"):
        next_occurrence(every(60), T0)


# --- Bounds shared by every kind.


def test_start_at_is_inclusive_and_end_at_is_inclusive() -> None:
    spec = every(60, start_at=at(0), end_at=at(180))
    assert list(occurrences(spec, at(-1))) == [at(0), at(60), at(120), at(180)]


def test_end_at_between_occurrences() -> None:
    spec = every(60, anchor=T0, end_at=at(179))
    assert list(occurrences(spec, T0)) == [at(60), at(120)]


def test_after_past_end_at_gives_nothing() -> None:
    spec = every(60, anchor=T0, end_at=at(120))
    assert next_occurrence(spec, at(120)) is None


def test_start_at_in_the_future_for_cron() -> None:
    spec = Spec(kind="cron", cron="0 * * * *", start_at=at(3600 * 5 + 1))
    assert upcoming(spec, 2, T0) == [at(3600 * 6), at(3600 * 7)]


def test_start_at_exactly_on_a_cron_instant_is_included() -> None:
    spec = Spec(kind="cron", cron="0 * * * *", start_at=at(3600 * 5))
    assert next_occurrence(spec, T0) == at(3600 * 5)


def test_end_at_is_inclusive_for_cron() -> None:
    spec = Spec(kind="cron", cron="0 * * * *", end_at=at(7200))
    assert list(occurrences(spec, T0)) == [at(3600), at(7200)]


@pytest.mark.parametrize(
    ("max_occurrences", "occurrence_count", "expected"),
    [
        pytest.param(3, 0, [at(60), at(120), at(180)], id="three-left"),
        pytest.param(3, 2, [at(60)], id="one-left"),
        pytest.param(3, 3, [], id="spent"),
        pytest.param(3, 5, [], id="overspent"),
        pytest.param(None, 7, [at(60), at(120), at(180), at(240)], id="unlimited"),
    ],
)
def test_max_occurrences_counts_what_is_left(
    max_occurrences: int | None, occurrence_count: int, expected: list[datetime]
) -> None:
    spec = every(60, anchor=T0, max_occurrences=max_occurrences, occurrence_count=occurrence_count)
    assert upcoming(spec, 4, T0) == expected


def test_occurrences_stop_when_bounds_end() -> None:
    spec = Spec(kind="cron", cron="* * * * *", max_occurrences=2)
    assert list(occurrences(spec, T0)) == [at(60), at(120)]


def test_upcoming_count_zero_and_negative() -> None:
    spec = every(60, anchor=T0)
    assert upcoming(spec, 0, T0) == []
    with pytest.raises(ValueError, match="count"):
        upcoming(spec, -1, T0)


# --- Once.


@pytest.mark.parametrize(
    ("spec", "after", "expected"),
    [
        pytest.param(Spec(kind="once", run_at=at(60)), T0, at(60), id="ahead"),
        pytest.param(Spec(kind="once", run_at=at(60)), at(60), None, id="at-is-not-after"),
        pytest.param(Spec(kind="once", run_at=at(60)), at(61), None, id="past"),
        pytest.param(Spec(kind="once", run_at=at(60), end_at=at(59)), T0, None, id="after-end-at"),
        pytest.param(
            Spec(kind="once", run_at=at(60), end_at=at(60)), T0, at(60), id="end-at-inclusive"
        ),
        pytest.param(
            Spec(kind="once", run_at=at(60), start_at=at(61)), T0, None, id="before-start-at"
        ),
        pytest.param(
            Spec(kind="once", run_at=at(60), start_at=at(60)), T0, at(60), id="start-at-inclusive"
        ),
        pytest.param(
            Spec(kind="once", run_at=at(60), max_occurrences=1, occurrence_count=1),
            T0,
            None,
            id="spent",
        ),
    ],
)
def test_once(spec: Spec, after: datetime, expected: datetime | None) -> None:
    assert next_occurrence(spec, after) == expected


def test_once_needs_run_at() -> None:
    with pytest.raises(InvalidSpec, match="run_at"):
        next_occurrence(Spec(kind="once"), T0)


def test_unknown_kind() -> None:
    with pytest.raises(InvalidSpec, match="Unknown schedule kind 'weekly'"):
        next_occurrence(Spec(kind="weekly"), T0)


# --- Naive datetimes are refused everywhere.


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(every(60, anchor=datetime(2026, 1, 1)), id="anchor"),
        pytest.param(every(60, start_at=datetime(2026, 1, 1)), id="start_at"),
        pytest.param(every(60, anchor=T0, end_at=datetime(2026, 1, 1)), id="end_at"),
        pytest.param(Spec(kind="once", run_at=datetime(2026, 1, 1)), id="run_at"),
    ],
)
def test_naive_spec_datetimes_are_refused(spec: Spec) -> None:
    with pytest.raises(ValueError, match="aware"):
        next_occurrence(spec, T0)


def test_naive_after_and_until_are_refused() -> None:
    spec = every(60, anchor=T0)
    with pytest.raises(ValueError, match="after must be an aware"):
        next_occurrence(spec, datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="until must be an aware"):
        count_between(spec, T0, datetime(2026, 1, 2))
    with pytest.raises(ValueError, match="occurrence_at must be an aware"):
        jitter_delay("k", datetime(2026, 1, 1), timedelta(seconds=5))


def test_occurrences_raises_before_iteration() -> None:
    with pytest.raises(InvalidSpec):
        occurrences(Spec(kind="cron", cron="0 0 30 2 *"), T0)


def test_cron_spec_with_unknown_zone() -> None:
    with pytest.raises(InvalidSpec, match="Unknown time zone 'Mars/Olympus'"):
        next_occurrence(Spec(kind="cron", cron="* * * * *", timezone="Mars/Olympus"), T0)


# --- count_between: occurrences in (after, until].


@pytest.mark.parametrize(
    ("spec", "after", "until", "expected"),
    [
        pytest.param(every(60, anchor=T0), T0, at(600), 10, id="interval-until-inclusive"),
        pytest.param(every(60, anchor=T0), T0, at(599), 9, id="interval-until-between"),
        pytest.param(every(60, anchor=T0), at(60), at(120), 1, id="interval-after-exclusive"),
        pytest.param(every(60, anchor=T0), at(-600), at(120), 2, id="interval-k-from-one"),
        pytest.param(every(60, start_at=T0), at(-600), at(120), 3, id="interval-k-from-zero"),
        pytest.param(every(60, anchor=T0), at(600), at(600), 0, id="empty-window"),
        pytest.param(every(60, anchor=T0), at(600), at(0), 0, id="reversed-window"),
        pytest.param(every(60, anchor=T0, end_at=at(300)), T0, at(600), 5, id="interval-end-at"),
        pytest.param(
            every(60, start_at=at(300), anchor=T0), T0, at(600), 6, id="interval-start-at"
        ),
        pytest.param(
            every(60, anchor=T0, max_occurrences=10, occurrence_count=7),
            T0,
            at(6000),
            3,
            id="interval-max-occurrences",
        ),
        pytest.param(
            every(1, anchor=T0), T0, at(100 * 365 * 86400), 100 * 365 * 86400, id="interval-o1"
        ),
        pytest.param(Spec(kind="cron", cron="*/15 * * * *"), T0, at(3600), 4, id="cron"),
        pytest.param(
            Spec(kind="cron", cron="*/15 * * * *", timezone="America/New_York"),
            datetime(2026, 11, 1, 4, tzinfo=UTC),
            datetime(2026, 11, 1, 8, tzinfo=UTC),
            16,
            id="cron-through-a-fold",
        ),
        pytest.param(
            Spec(kind="cron", cron="* * * * *", max_occurrences=5), T0, at(86400), 5, id="cron-max"
        ),
        pytest.param(Spec(kind="once", run_at=at(60)), T0, at(60), 1, id="once-in"),
        pytest.param(Spec(kind="once", run_at=at(60)), at(60), at(120), 0, id="once-out"),
    ],
)
def test_count_between(spec: Spec, after: datetime, until: datetime, expected: int) -> None:
    assert count_between(spec, after, until) == expected


def test_count_between_agrees_with_iteration_for_intervals() -> None:
    spec = every(7, start_at=at(3), end_at=at(500), max_occurrences=60, occurrence_count=2)
    for lo in range(-20, 520, 13):
        for hi in range(lo, 540, 17):
            window = [t for t in occurrences(spec, at(lo)) if t <= at(hi)]
            assert count_between(spec, at(lo), at(hi)) == len(window), (lo, hi)


# --- Jitter.


def test_jitter_is_zero_without_jitter() -> None:
    assert jitter_delay("schedule:1", T0, timedelta(0)) == timedelta(0)


def test_jitter_is_deterministic_and_in_range() -> None:
    jitter = timedelta(seconds=30)
    delays = [jitter_delay(f"schedule:{n}", T0, jitter) for n in range(200)]
    assert delays == [jitter_delay(f"schedule:{n}", T0, jitter) for n in range(200)]
    assert all(timedelta(0) <= d < jitter for d in delays)
    assert len(set(delays)) > 150  # spread, not constant


def test_jitter_depends_on_the_occurrence_not_its_zone() -> None:
    jitter = timedelta(minutes=5)
    tokyo = T0.astimezone(ZoneInfo("Asia/Tokyo"))
    assert jitter_delay("s", tokyo, jitter) == jitter_delay("s", T0, jitter)
    later = [jitter_delay("s", at(60 * n), jitter) for n in range(20)]
    assert len(set(later)) > 1


def test_jitter_of_one_microsecond_is_zero() -> None:
    assert jitter_delay("s", T0, timedelta(microseconds=1)) == timedelta(0)


def test_jitter_is_sha256_of_key_and_utc_iso() -> None:
    digest = hashlib.sha256(b"s2026-01-01T00:00:00+00:00").digest()
    expected = int.from_bytes(digest, "big") % 1_000_000
    assert jitter_delay("s", T0, timedelta(seconds=1)) == timedelta(microseconds=expected)


def test_negative_jitter_is_refused() -> None:
    with pytest.raises(ValueError, match="jitter"):
        jitter_delay("s", T0, timedelta(seconds=-1))


# --- Time zones.


@pytest.mark.parametrize(
    "name", ["UTC", "America/New_York", "Europe/Dublin", "Australia/Lord_Howe", "Etc/GMT+5"]
)
def test_validate_timezone_accepts_iana_names(name: str) -> None:
    assert validate_timezone(name) == ZoneInfo(name)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param(" ", id="blank"),
        pytest.param("Mars/Olympus", id="unknown"),
        pytest.param("UTC ", id="trailing-space"),
        pytest.param("/etc/passwd", id="absolute-path"),
        pytest.param("../etc/passwd", id="parent"),
        pytest.param("America/../UTC", id="dot-dot"),
        pytest.param("America", id="directory"),
        pytest.param("America/New_York/", id="trailing-slash"),
        pytest.param("zone.tab", id="not-tzif"),
        pytest.param("UTC\x00", id="nul"),
        pytest.param("A" * 5000, id="too-long"),
    ],
)
def test_validate_timezone_rejects_with_invalid_spec_only(name: str) -> None:
    with pytest.raises(InvalidSpec, match="Unknown time zone"):
        validate_timezone(name)


def test_validate_timezone_message() -> None:
    with pytest.raises(InvalidSpec) as caught:
        validate_timezone("Mars/Olympus")
    assert str(caught.value) == "Unknown time zone 'Mars/Olympus'."


@pytest.mark.parametrize("value", [None, 3], ids=["none", "int"])
def test_validate_timezone_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidSpec, match="Unknown time zone"):
        validate_timezone(value)  # type: ignore[arg-type]


def test_occurrences_is_lazy_for_unbounded_specs() -> None:
    assert len(list(islice(occurrences(every(1, anchor=T0), T0), 5))) == 5
