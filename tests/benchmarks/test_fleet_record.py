"""The oracle of the fleet tests and the chaos run for invariants 1, 2 and 4
(``benchmarks.fleet.occurrence_record``), on synthetic rows: a record with a gap, a
duplicate, a wrong missed range or a row past the window is reported, or every test that
relies on it would pass whatever the engine wrote."""

from datetime import UTC, datetime, timedelta

import pytest

from benchmarks.fleet import occurrence_record
from django_cadence.models import Attempt, Schedule, Status

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def every_minute(**fields) -> Schedule:
    """An interval schedule created at T0: its occurrences are T0 + 1 min, T0 + 2 min, ..."""
    return Schedule(
        name="s",
        kind="interval",
        interval=MINUTE,
        executor="tests.jobs.noop",
        created_at=T0,
        **fields,
    )


def at(n: int) -> datetime:
    """The n-th occurrence (the first is 1)."""
    return T0 + n * MINUTE


def row(n: int, status: str = Status.SUCCEEDED) -> Attempt:
    return Attempt(occurrence_at=at(n), status=status)


def missed(first: datetime, last: datetime, count: int, *, row_at: datetime | None = None):
    """A missed record: the row at its first occurrence (unless ``row_at``), its range and
    count in its outcome, as the planner writes them."""
    return Attempt(
        occurrence_at=row_at or first,
        status=Status.MISSED,
        outcome={"missed": count, "first": first.isoformat(), "last": last.isoformat()},
    )


def findings(record) -> dict[str, list]:
    found = {
        "gaps": record.gaps,
        "twice": record.twice,
        "beyond": record.beyond,
        "bad_missed": record.bad_missed,
    }
    return {name: values for name, values in found.items() if values}


def test_a_whole_record_has_no_finding_and_counts_its_rows():
    rows = [
        row(1),
        row(2, Status.DEAD_LETTER),
        missed(at(3), at(5), 3),
        row(6, Status.SKIPPED),
        row(7, Status.PENDING),
    ]
    record = occurrence_record(every_minute(), rows, at(7))
    assert findings(record) == {}
    assert record.expected == [at(n) for n in range(1, 8)]
    assert (record.rows, record.planned, record.missed) == (5, 4, 3)


def test_an_occurrence_without_a_record_is_a_gap():
    record = occurrence_record(every_minute(), [row(1), row(2), row(4)], at(4))
    assert findings(record) == {"gaps": [at(3)]}


def test_the_last_occurrence_of_the_window_needs_a_record_too():
    record = occurrence_record(every_minute(), [row(1), row(2)], at(3))
    assert findings(record) == {"gaps": [at(3)]}


@pytest.mark.parametrize(
    "rows",
    [
        [row(1), row(2), row(2, Status.SKIPPED), row(3)],
        [row(1), row(2), missed(at(2), at(3), 2)],
        [missed(at(1), at(2), 2), missed(at(2), at(3), 2)],
    ],
    ids=["two-rows", "a-row-and-a-missed-range", "two-missed-ranges"],
)
def test_an_occurrence_recorded_twice_is_a_duplicate(rows):
    record = occurrence_record(every_minute(), rows, at(3))
    assert findings(record) == {"twice": [at(2)]}


@pytest.mark.parametrize(
    "wrong",
    [
        missed(at(2), at(4), 2),  # three occurrences in the range, counted two
        missed(at(2), at(4), 4),  # counted four
        missed(at(2), at(4), 3, row_at=at(3)),  # the row is not at the range's first
        missed(at(2) - MINUTE / 2, at(4), 3, row_at=at(2) - MINUTE / 2),  # first: no occurrence
        missed(at(2), at(4) + MINUTE / 2, 3),  # last: no occurrence
    ],
    ids=["count-short", "count-long", "row-not-at-first", "first-off-grid", "last-off-grid"],
)
def test_a_missed_range_that_is_not_a_run_of_occurrences_is_reported(wrong):
    record = occurrence_record(every_minute(), [row(1), wrong, row(5)], at(5))
    assert list(findings(record)) == ["bad_missed"], findings(record)
    (report,) = record.bad_missed
    assert report.startswith(f"s: missed row at {wrong.occurrence_at.isoformat()} ")


def test_a_missed_range_reaching_past_the_window_is_reported():
    # Three occurrences missed, but the window ends after the second: the record claims an
    # occurrence that had not come yet.
    record = occurrence_record(every_minute(), [row(1), missed(at(2), at(4), 3)], at(3))
    assert list(findings(record)) == ["bad_missed"]


def test_a_row_past_the_window_or_off_the_grid_is_beyond():
    rows = [row(1), row(2), row(3), row(4)]
    assert findings(occurrence_record(every_minute(), rows, at(3))) == {"beyond": [at(4)]}
    off_grid = Attempt(occurrence_at=at(1) + MINUTE / 2, status=Status.SUCCEEDED)
    record = occurrence_record(every_minute(), [row(1), off_grid, row(2)], at(2))
    assert findings(record) == {"beyond": [off_grid.occurrence_at]}
    before = Attempt(occurrence_at=T0, status=Status.SUCCEEDED)  # the creation is no occurrence
    record = occurrence_record(every_minute(), [before, row(1)], at(1))
    assert findings(record) == {"beyond": [T0]}


def test_rows_planned_ahead_are_allowed_up_to_the_horizon_and_not_required():
    rows = [row(1), row(2), row(3)]
    schedule = every_minute()
    assert findings(occurrence_record(schedule, rows, at(2), ahead=MINUTE)) == {}
    assert findings(occurrence_record(schedule, rows[:2], at(2), ahead=MINUTE)) == {}
    too_far = occurrence_record(schedule, [*rows, row(4)], at(2), ahead=MINUTE)
    assert findings(too_far) == {"beyond": [at(4)]}


def test_rows_planned_ahead_of_an_end_set_at_the_windows_close_are_allowed():
    """The chaos run ends every schedule at its window's end, after some occurrences beyond it
    were planned ahead: those count as planned ahead, not as beyond the schedule's end."""
    schedule = every_minute(end_at=at(2))
    rows = [row(1), row(2), row(3)]
    assert findings(occurrence_record(schedule, rows, at(2), ahead=MINUTE)) == {}
    assert findings(occurrence_record(schedule, rows, at(2))) == {"beyond": [at(3)]}
