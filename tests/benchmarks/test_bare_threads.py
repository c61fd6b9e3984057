"""The bare-threads control of ``compare``: its instants, and how its figures are shown."""

import itertools
from datetime import UTC, datetime, timedelta

from benchmarks.compare import _figures
from benchmarks.peers.run_bare_threads import instants

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_one_shots_start_once_intervals_repeat_and_idle_groups_are_left_out():
    groups = [
        {"prefix": "w2-", "count": 2, "kind": "interval", "every": 1, "offset": 0},
        {"prefix": "w1-", "count": 2, "kind": "once", "offset": 0},
        {"prefix": "late-", "count": 1, "kind": "once", "offset": 2},
    ]
    first = list(itertools.islice(instants(groups, T0), 3))
    assert first == [
        (T0, ["w2-000000", "w2-000001", "w1-000000", "w1-000001"]),
        (T0 + timedelta(seconds=1), ["w2-000000", "w2-000001"]),
        (T0 + timedelta(seconds=2), ["late-000000", "w2-000000", "w2-000001"]),
    ]


def test_the_control_is_never_the_best_peer_and_ours_is_shown_as_a_ratio_to_it():
    results = {
        "cadence": {"rows": [{"p99_ms": 60.0}]},
        "apscheduler": {"rows": [{"p99_ms": 300.0}]},
        "bare-threads": {"rows": [{"p99_ms": 40.0}]},
    }
    (row,) = [r for r in _figures("W2", results) if r["figure"] == "p99_ms"]
    assert row["best_peer"] == "apscheduler"
    assert row["ours/best"] == 0.2
    assert row["ours/bare-threads"] == 1.5
