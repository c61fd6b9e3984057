"""The pure misfire, overlap, retry, recovery and auto-pause decisions (docs/design.md, "Policies").

Every expectation below is written out from the rules, not recomputed with the code under test.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from django_cadence.schedule.policies import (
    OverlapState,
    admit,
    backoff,
    is_serial,
    plan_failure,
    plan_misfire,
    plan_recovery,
    should_pause,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
GRACE = timedelta(seconds=60)
BASE = timedelta(seconds=10)
CAP = timedelta(hours=1)


def ago(seconds: int, microseconds: int = 0) -> datetime:
    """The instant ``seconds`` (and ``microseconds``) before NOW."""
    return NOW - timedelta(seconds=seconds, microseconds=microseconds)


def agos(*seconds: int) -> tuple[datetime, ...]:
    return tuple(ago(s) for s in seconds)


# --- plan_misfire ----------------------------------------------------------------------------

# With GRACE = 60 s: 300, 200, 100 and 61 seconds ago are late; 60 (the boundary), 40, 10 and 0
# seconds ago are on time.
MISFIRE_CASES = [
    # policy, due (seconds ago, oldest first), max_catchup, fire, missed, advance_to
    pytest.param("skip", (), 100, (), (), None, id="skip-empty"),
    pytest.param("fire_once", (), 100, (), (), None, id="fire_once-empty"),
    pytest.param("fire_all", (), 100, (), (), None, id="fire_all-empty"),
    pytest.param("skip", (50, 30, 0), 100, (50, 30, 0), (), 0, id="skip-all-on-time"),
    pytest.param("fire_once", (50, 30, 0), 100, (50, 30, 0), (), 0, id="fire_once-all-on-time"),
    pytest.param("fire_all", (50, 30, 0), 100, (50, 30, 0), (), 0, id="fire_all-all-on-time"),
    pytest.param("skip", (300, 200, 100), 100, (), (300, 200, 100), 100, id="skip-all-late"),
    pytest.param(
        "fire_once", (300, 200, 100), 100, (100,), (300, 200), 100, id="fire_once-all-late"
    ),
    pytest.param(
        "fire_all", (300, 200, 100), 100, (300, 200, 100), (), 100, id="fire_all-all-late"
    ),
    pytest.param("skip", (61,), 100, (), (61,), 61, id="skip-one-late-by-one-second"),
    pytest.param(
        "fire_once", (300,), 100, (300,), (), 300, id="fire_once-single-late-fires-nothing-missed"
    ),
    pytest.param(
        "skip",
        (300, 200, 100, 40, 10),
        100,
        (40, 10),
        (300, 200, 100),
        10,
        id="skip-mixed",
    ),
    pytest.param(
        "fire_once",
        (300, 200, 100, 40, 10),
        100,
        (100, 40, 10),
        (300, 200),
        10,
        id="fire_once-mixed-latest-late-plus-on-time",
    ),
    pytest.param(
        "fire_all",
        (300, 200, 100, 40, 10),
        100,
        (300, 200, 100, 40, 10),
        (),
        10,
        id="fire_all-mixed-under-cap-advances-to-last-due",
    ),
    pytest.param("skip", (60,), 100, (60,), (), 60, id="skip-exactly-grace-is-on-time"),
    pytest.param(
        "fire_once", (61, 60), 100, (61, 60), (), 60, id="fire_once-exactly-grace-is-on-time"
    ),
    pytest.param(
        "fire_all",
        (300, 200, 100, 40, 10),
        3,
        (300, 200, 100),
        (),
        100,
        id="fire_all-capped-advances-to-last-fired",
    ),
    pytest.param(
        "fire_all",
        (300, 200, 100, 40, 10),
        1,
        (300,),
        (),
        300,
        id="fire_all-cap-one-fires-oldest",
    ),
    pytest.param(
        "fire_all",
        (300, 200, 100),
        3,
        (300, 200, 100),
        (),
        100,
        id="fire_all-exactly-at-cap-advances-to-last-due",
    ),
]


@pytest.mark.parametrize(
    ("policy", "due", "max_catchup", "fire", "missed", "advance_to"), MISFIRE_CASES
)
def test_plan_misfire_splits_due_exactly(policy, due, max_catchup, fire, missed, advance_to):
    plan = plan_misfire(agos(*due), NOW, policy=policy, grace=GRACE, max_catchup=max_catchup)

    assert plan.fire == agos(*fire)
    assert plan.missed == agos(*missed)
    assert plan.advance_to == (None if advance_to is None else ago(advance_to))


@pytest.mark.parametrize(
    ("policy", "due", "max_catchup", "fire", "missed", "advance_to"),
    [case for case in MISFIRE_CASES if case.values[0] != "fire_all"],
)
def test_plan_misfire_partitions_due_for_skip_and_fire_once(
    policy, due, max_catchup, fire, missed, advance_to
):
    plan = plan_misfire(agos(*due), NOW, policy=policy, grace=GRACE, max_catchup=max_catchup)

    assert not set(plan.fire) & set(plan.missed)
    assert sorted(plan.fire + plan.missed) == sorted(agos(*due))


@pytest.mark.parametrize(
    ("late_by", "on_time"),
    [
        pytest.param(timedelta(seconds=60), True, id="exactly-grace-on-time"),
        pytest.param(timedelta(seconds=60, microseconds=1), False, id="one-microsecond-over-late"),
        pytest.param(timedelta(seconds=59, microseconds=999_999), True, id="just-under-on-time"),
    ],
)
def test_plan_misfire_grace_boundary(late_by, on_time):
    at = NOW - late_by

    plan = plan_misfire([at], NOW, policy="skip", grace=GRACE, max_catchup=100)

    assert plan.fire == ((at,) if on_time else ())
    assert plan.missed == (() if on_time else (at,))


@pytest.mark.parametrize(
    ("policy", "due", "fire", "missed"),
    [
        pytest.param("skip", (0,), (0,), (), id="skip-due-now"),
        pytest.param("skip", (1,), (), (1,), id="skip-one-second-late"),
        pytest.param("fire_once", (2, 1, 0), (1, 0), (2,), id="fire_once"),
    ],
)
def test_plan_misfire_zero_grace(policy, due, fire, missed):
    plan = plan_misfire(agos(*due), NOW, policy=policy, grace=timedelta(0), max_catchup=100)

    assert plan.fire == agos(*fire)
    assert plan.missed == agos(*missed)


@pytest.mark.parametrize(
    ("count", "cap", "ticks"),
    [
        pytest.param(10, 3, 4, id="ten-by-three"),
        pytest.param(6, 3, 2, id="six-by-three"),
        pytest.param(5, 100, 1, id="under-cap"),
    ],
)
def test_plan_misfire_fire_all_leaves_the_rest_for_later_ticks(count, cap, ticks):
    due = [ago(600 - 30 * i) for i in range(count)]
    fired: list[datetime] = []
    rounds = 0
    while due:
        plan = plan_misfire(due, NOW, policy="fire_all", grace=GRACE, max_catchup=cap)
        assert len(plan.fire) <= cap
        assert plan.missed == ()
        fired.extend(plan.fire)
        due = [at for at in due if at > plan.advance_to]
        rounds += 1

    assert fired == [ago(600 - 30 * i) for i in range(count)]
    assert rounds == ticks


@pytest.mark.parametrize(
    "due",
    [pytest.param((), id="empty-due"), pytest.param((100, 10), id="some-due")],
)
@pytest.mark.parametrize("policy", ["", "fire_last", "FIRE_ONCE", "skip_if_running"])
def test_plan_misfire_rejects_unknown_policy(policy, due):
    with pytest.raises(ValueError, match="unknown misfire policy"):
        plan_misfire(agos(*due), NOW, policy=policy, grace=GRACE, max_catchup=100)


due_lists = st.lists(st.integers(0, 10_000), unique=True, max_size=30).map(
    lambda seconds: [ago(s) for s in sorted(seconds, reverse=True)]
)


@settings(max_examples=200, deadline=None)
@given(
    due=due_lists,
    grace=st.integers(0, 3_000).map(lambda s: timedelta(seconds=s)),
    policy=st.sampled_from(["skip", "fire_once"]),
)
def test_plan_misfire_partition_property(due, grace, policy):
    plan = plan_misfire(due, NOW, policy=policy, grace=grace, max_catchup=100)

    assert not set(plan.fire) & set(plan.missed), "an occurrence both fired and missed"
    assert set(plan.fire) | set(plan.missed) == set(due), "an occurrence neither fired nor missed"
    assert list(plan.fire) == sorted(plan.fire)
    assert plan.advance_to == (due[-1] if due else None)
    on_time = {at for at in due if NOW - at <= grace}
    late = [at for at in due if NOW - at > grace]
    assert on_time <= set(plan.fire), "an occurrence within grace did not fire"
    fired_late = [at for at in plan.fire if at not in on_time]
    if policy == "skip":
        assert fired_late == []
    else:
        assert fired_late == late[-1:]


@settings(max_examples=100, deadline=None)
@given(
    due=due_lists.filter(bool),
    grace=st.integers(0, 3_000).map(lambda s: timedelta(seconds=s)),
    cap=st.integers(1, 40),
)
def test_plan_misfire_fire_all_property(due, grace, cap):
    plan = plan_misfire(due, NOW, policy="fire_all", grace=grace, max_catchup=cap)

    assert plan.fire == tuple(due[:cap])
    assert plan.missed == ()
    assert plan.advance_to == due[min(cap, len(due)) - 1]


# --- admit / is_serial -----------------------------------------------------------------------

P, S = "pending", "skipped"

# (policy, running, waiting) -> statuses for three new occurrences in order; for fewer, the
# first ``count`` of them (each decision depends only on the ones before it).
ADMIT_TABLE = {
    ("allow", 0, 0): (P, P, P),
    ("allow", 0, 1): (P, P, P),
    ("allow", 1, 0): (P, P, P),
    ("allow", 1, 1): (P, P, P),
    ("skip_if_running", 0, 0): (P, P, P),
    ("skip_if_running", 0, 1): (P, P, P),
    ("skip_if_running", 1, 0): (S, S, S),
    ("skip_if_running", 1, 1): (S, S, S),
    ("queue", 0, 0): (P, P, P),
    ("queue", 0, 1): (P, P, P),
    ("queue", 1, 0): (P, P, P),
    ("queue", 1, 1): (P, P, P),
    # One at the head (running, or next to run when nothing runs) and one waiting behind it.
    ("buffer_one", 0, 0): (P, P, S),
    ("buffer_one", 0, 1): (P, S, S),
    ("buffer_one", 1, 0): (P, S, S),
    ("buffer_one", 1, 1): (S, S, S),
}

# replace: the newest of the new occurrences runs; the older new ones are skipped.
REPLACE_STATUSES = {1: (P,), 2: (S, P), 3: (S, S, P)}

ADMIT_CASES = [
    pytest.param(
        policy,
        running,
        waiting,
        count,
        statuses[:count],
        id=f"{policy}-running{running}-waiting{waiting}-count{count}",
    )
    for (policy, running, waiting), statuses in ADMIT_TABLE.items()
    for count in (1, 2, 3)
] + [
    pytest.param(
        "replace",
        running,
        waiting,
        count,
        REPLACE_STATUSES[count],
        id=f"replace-running{running}-waiting{waiting}-count{count}",
    )
    for running in (0, 1)
    for waiting in (0, 1)
    for count in (1, 2, 3)
]


@pytest.mark.parametrize(("policy", "running", "waiting", "count", "statuses"), ADMIT_CASES)
def test_admit_statuses(policy, running, waiting, count, statuses):
    admission = admit(policy, OverlapState(running=running, waiting=waiting), count)

    assert admission.statuses == statuses


@pytest.mark.parametrize(("policy", "running", "waiting", "count", "statuses"), ADMIT_CASES)
def test_admit_reasons_exactly_for_skipped(policy, running, waiting, count, statuses):
    admission = admit(policy, OverlapState(running=running, waiting=waiting), count)

    assert len(admission.reasons) == count
    for status, reason in zip(admission.statuses, admission.reasons, strict=True):
        if status == S:
            assert reason
            assert f"overlap={policy}" in reason
        else:
            assert reason == ""


@pytest.mark.parametrize(
    ("policy", "running", "waiting", "count", "cancel"),
    [
        pytest.param("replace", 1, 0, 1, True, id="replace-running-admits-one"),
        pytest.param("replace", 1, 1, 3, True, id="replace-running-and-waiting"),
        pytest.param("replace", 0, 0, 1, False, id="replace-nothing-running"),
        pytest.param("replace", 0, 1, 2, False, id="replace-only-waiting"),
        pytest.param("replace", 1, 0, 0, False, id="replace-running-nothing-admitted"),
        pytest.param("queue", 1, 0, 1, False, id="queue-never-cancels"),
        pytest.param("buffer_one", 1, 0, 1, False, id="buffer_one-never-cancels"),
        pytest.param("skip_if_running", 1, 0, 1, False, id="skip_if_running-never-cancels"),
        pytest.param("allow", 1, 0, 1, False, id="allow-never-cancels"),
    ],
)
def test_admit_cancels_running_only_under_replace(policy, running, waiting, count, cancel):
    admission = admit(policy, OverlapState(running=running, waiting=waiting), count)

    assert admission.cancel_running is cancel


@pytest.mark.parametrize("policy", ["allow", "skip_if_running", "queue", "buffer_one", "replace"])
@pytest.mark.parametrize("waiting", [0, 1, 3])
def test_only_replace_supersedes_the_waiting_attempts(policy, waiting):
    """docs/design.md, Overlap: under replace a newer occurrence supersedes every older one
    still waiting, so a short-interval schedule never builds a backlog."""
    admission = admit(policy, OverlapState(running=1, waiting=waiting), 1)

    assert admission.cancel_waiting is (policy == "replace" and waiting > 0)


@pytest.mark.parametrize("running", [0, 1])
def test_skip_if_running_counts_an_attempt_waiting_for_its_retry_as_in_flight(running):
    """docs/design.md, Overlap: its occurrence has not ended, so later ones are skipped and
    say why (they are not left pending behind it)."""
    state = OverlapState(running=running, waiting=1, retrying=1)
    admission = admit("skip_if_running", state, 2)

    assert admission.statuses == (S, S)
    assert all("overlap=skip_if_running" in reason for reason in admission.reasons)
    if not running:
        assert all("waiting for its retry" in reason for reason in admission.reasons)


@pytest.mark.parametrize("policy", ["allow", "queue", "buffer_one"])
def test_other_policies_let_occurrences_wait_behind_a_retry(policy):
    admission = admit(policy, OverlapState(waiting=1, retrying=1), 1)

    assert admission.statuses == (P,)


@pytest.mark.parametrize("count", [0, 1, 2])
@pytest.mark.parametrize(
    "state",
    [
        pytest.param(OverlapState(), id="idle"),
        pytest.param(OverlapState(running=1, waiting=1), id="busy"),
    ],
)
@pytest.mark.parametrize("policy", ["", "serial", "Queue", "fire_once"])
def test_admit_rejects_unknown_policy(policy, state, count):
    with pytest.raises(ValueError, match="unknown overlap policy"):
        admit(policy, state, count)


@pytest.mark.parametrize(
    ("policy", "serial"),
    [
        pytest.param("allow", False, id="allow"),
        pytest.param("skip_if_running", True, id="skip_if_running"),
        pytest.param("queue", True, id="queue"),
        pytest.param("buffer_one", True, id="buffer_one"),
        pytest.param("replace", True, id="replace"),
    ],
)
def test_is_serial_for_every_policy(policy, serial):
    assert is_serial(policy) is serial


# --- backoff ---------------------------------------------------------------------------------

KEYS = [f"schedule-7:2026-03-01T12:{minute:02d}:00Z" for minute in range(60)]


@pytest.mark.parametrize(
    ("try_number", "nominal"),
    [
        pytest.param(1, timedelta(seconds=10), id="try-1"),
        pytest.param(2, timedelta(seconds=20), id="try-2"),
        pytest.param(3, timedelta(seconds=40), id="try-3"),
        pytest.param(4, timedelta(seconds=80), id="try-4"),
        pytest.param(5, timedelta(seconds=160), id="try-5"),
        pytest.param(6, timedelta(seconds=320), id="try-6"),
        pytest.param(7, timedelta(seconds=640), id="try-7"),
        pytest.param(8, timedelta(seconds=1280), id="try-8"),
        pytest.param(9, timedelta(seconds=2560), id="try-9"),
        pytest.param(10, timedelta(hours=1), id="try-10-capped"),
    ],
)
def test_backoff_within_jitter_bounds(try_number, nominal):
    delays = [backoff(try_number, base=BASE, cap=CAP, key=key) for key in KEYS]

    for delay in delays:
        assert nominal * 0.8 <= delay <= nominal
    # The jitter is real and spread over the 20 %, not a constant offset.
    assert min(delays) < nominal * 0.85
    assert max(delays) > nominal * 0.95


@pytest.mark.parametrize("try_number", [1, 4, 10])
@pytest.mark.parametrize("key", ["", "a", KEYS[0]])
def test_backoff_is_deterministic_per_key(key, try_number):
    first = backoff(try_number, base=BASE, cap=CAP, key=key)

    assert backoff(try_number, base=BASE, cap=CAP, key=key) == first


@pytest.mark.parametrize("try_number", [1, 5, 10])
def test_backoff_differs_across_keys(try_number):
    delays = {backoff(try_number, base=BASE, cap=CAP, key=key) for key in KEYS}

    assert len(delays) >= len(KEYS) - 2


@pytest.mark.parametrize(
    ("try_number", "base", "cap"),
    [
        pytest.param(1000, BASE, CAP, id="defaults-n1000"),
        pytest.param(10**6, BASE, CAP, id="defaults-n1e6"),
        pytest.param(40, timedelta(minutes=10), timedelta(days=7), id="base-10min-n40"),
        pytest.param(31, timedelta(days=1), timedelta(days=7), id="base-1day-n31"),
        pytest.param(1000, timedelta(days=1), timedelta(days=7), id="base-1day-n1000"),
        pytest.param(3, timedelta(hours=2), CAP, id="base-above-cap"),
    ],
)
def test_backoff_capped_for_huge_try_numbers(try_number, base, cap):
    delay = backoff(try_number, base=base, cap=cap, key="k")

    assert cap * 0.8 <= delay <= cap


@pytest.mark.parametrize("try_number", [0, -1, -1000])
def test_backoff_rejects_try_number_below_one(try_number):
    with pytest.raises(ValueError, match="starts at 1"):
        backoff(try_number, base=BASE, cap=CAP, key="k")


# --- plan_failure ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tries", "max_attempts"),
    [
        pytest.param(1, 5, id="first-try-of-five"),
        pytest.param(4, 5, id="tries-left"),
        pytest.param(3, 3, id="last-try"),
    ],
)
def test_plan_failure_permanent_dead_letters_at_once(tries, max_attempts):
    plan = plan_failure(
        tries=tries,
        max_attempts=max_attempts,
        now=NOW,
        base=BASE,
        cap=CAP,
        key="k",
        permanent=True,
    )

    assert plan.retry_at is None
    assert "permanent" in plan.reason


@pytest.mark.parametrize(
    ("tries", "max_attempts", "nominal"),
    [
        pytest.param(1, 3, timedelta(seconds=10), id="after-try-1-of-3"),
        pytest.param(2, 3, timedelta(seconds=20), id="after-try-2-of-3"),
        pytest.param(5, 10, timedelta(seconds=160), id="after-try-5-of-10"),
        pytest.param(12, 20, timedelta(hours=1), id="after-try-12-of-20-capped"),
    ],
)
def test_plan_failure_retries_after_backoff(tries, max_attempts, nominal):
    plan = plan_failure(
        tries=tries, max_attempts=max_attempts, now=NOW, base=BASE, cap=CAP, key="k"
    )

    assert plan.retry_at is not None
    assert NOW + nominal * 0.8 <= plan.retry_at <= NOW + nominal
    assert plan.retry_at == NOW + backoff(tries, base=BASE, cap=CAP, key="k")


@pytest.mark.parametrize(
    ("tries", "max_attempts"),
    [
        pytest.param(1, 1, id="single-attempt"),
        pytest.param(3, 3, id="three-of-three"),
        pytest.param(5, 3, id="past-max-after-lowering"),
    ],
)
def test_plan_failure_dead_letters_when_no_tries_left(tries, max_attempts):
    plan = plan_failure(
        tries=tries, max_attempts=max_attempts, now=NOW, base=BASE, cap=CAP, key="k"
    )

    assert plan.retry_at is None
    assert f"{tries} of {max_attempts}" in plan.reason


# --- plan_recovery ---------------------------------------------------------------------------
# ``recoveries`` is Attempt.recoveries: how often the attempt was already recovered before
# this loss. With CADENCE_MAX_RECOVERIES = 3, the third loss dead-letters it.


@pytest.mark.parametrize(
    ("tries", "max_attempts", "recoveries"),
    [
        pytest.param(1, 3, 0, id="first-loss-tries-left"),
        pytest.param(3, 3, 0, id="last-try"),
        pytest.param(2, 5, 2, id="crash-loop"),
    ],
)
def test_plan_recovery_at_most_once_always_dead_letters(tries, max_attempts, recoveries):
    reason = plan_recovery(
        tries=tries,
        max_attempts=max_attempts,
        recoveries=recoveries,
        max_recoveries=3,
        delivery="at_most_once",
    )

    assert reason is not None
    assert "uncertain" in reason


@pytest.mark.parametrize("delivery", ["at_least_once", "atomic", "at_most_once"])
def test_plan_recovery_of_a_try_marked_uncertain_dead_letters_with_its_reason(delivery):
    reason = plan_recovery(
        tries=1,
        max_attempts=10,
        recoveries=0,
        max_recoveries=3,
        delivery=delivery,
        uncertain="charging card",
    )

    assert reason is not None
    assert "marked itself uncertain (charging card)" in reason


@pytest.mark.parametrize("delivery", ["at_least_once", "atomic"])
@pytest.mark.parametrize(
    ("tries", "max_attempts", "recoveries", "max_recoveries", "expected"),
    [
        pytest.param(1, 10, 0, 3, None, id="first-loss-retries"),
        pytest.param(2, 10, 1, 3, None, id="second-loss-retries"),
        pytest.param(3, 10, 2, 3, "lost its worker repeatedly (3 times)", id="third-loss"),
        pytest.param(9, 10, 7, 3, "lost its worker repeatedly (8 times)", id="past-max"),
        pytest.param(1, 10, 0, 1, "lost its worker repeatedly (1 times)", id="max-one"),
        pytest.param(3, 3, 0, 3, "(3 of 3)", id="tries-exhausted"),
        pytest.param(4, 3, 1, 3, "(4 of 3)", id="tries-past-max"),
        pytest.param(3, 3, 2, 3, "lost its worker repeatedly", id="crash-loop-reason-wins"),
        pytest.param(2, 3, 1, 3, None, id="tries-and-recoveries-left"),
    ],
)
def test_plan_recovery_outcome(delivery, tries, max_attempts, recoveries, max_recoveries, expected):
    reason = plan_recovery(
        tries=tries,
        max_attempts=max_attempts,
        recoveries=recoveries,
        max_recoveries=max_recoveries,
        delivery=delivery,
    )

    if expected is None:
        assert reason is None
    else:
        assert reason is not None
        assert expected in reason


# --- should_pause ----------------------------------------------------------------------------

D, OK = "dead_letter", "succeeded"


@pytest.mark.parametrize(
    ("recent", "threshold", "pause"),
    [
        pytest.param([D] * 5, None, False, id="unset-never"),
        pytest.param([D] * 5, 0, False, id="zero-never"),
        pytest.param([], 1, False, id="no-history"),
        pytest.param([D, D], 3, False, id="fewer-than-threshold"),
        pytest.param([D, D, D], 3, True, id="exactly-threshold-all-dead"),
        pytest.param([D, D, D, OK, OK], 3, True, id="most-recent-all-dead-older-success"),
        pytest.param([D, D, OK, D], 3, False, id="success-within-most-recent"),
        pytest.param([OK, D, D, D], 3, False, id="latest-succeeded"),
        pytest.param([D, OK], 1, True, id="threshold-one-latest-dead"),
        pytest.param([OK, D], 1, False, id="threshold-one-latest-ok"),
        pytest.param([D, "skipped", D], 3, False, id="skipped-is-not-a-dead-letter"),
        pytest.param([D, "cancelled", D], 3, False, id="cancelled-is-not-a-dead-letter"),
    ],
)
def test_should_pause(recent, threshold, pause):
    assert should_pause(recent, threshold) is pause
