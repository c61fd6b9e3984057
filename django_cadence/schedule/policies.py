"""Misfire, overlap and retry decisions as pure functions of (schedule state, now).

The planner and runner ask these for a plan and apply it in one transaction; nothing here
reads the clock or the database, so every branch is testable with plain values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

# --- misfire -------------------------------------------------------------------------------

MISFIRE_POLICIES = frozenset({"skip", "fire_once", "fire_all"})


@dataclass(frozen=True)
class MisfirePlan:
    """What to do with the due occurrences of one schedule in one tick.

    ``fire`` get attempts (oldest first); ``missed`` are recorded as not run; ``advance_to`` is
    the last occurrence this plan consumed (the schedule continues strictly after it).
    """

    fire: tuple[datetime, ...]
    missed: tuple[datetime, ...] = ()
    advance_to: datetime | None = None


def plan_misfire(
    due: Sequence[datetime],
    now: datetime,
    *,
    policy: str,
    grace: timedelta,
    max_catchup: int,
) -> MisfirePlan:
    """Split ``due`` (ascending, all <= now) into occurrences to fire and ones missed.

    An occurrence is misfired when it is more than ``grace`` late. Occurrences within the
    grace always fire. ``fire_all`` fires misfired ones too, at most ``max_catchup`` per tick,
    leaving the rest for later ticks (``advance_to`` stops at the last one planned).
    """
    if policy not in MISFIRE_POLICIES:
        raise ValueError(f"unknown misfire policy {policy!r}")
    if not due:
        return MisfirePlan(fire=())
    late = [at for at in due if now - at > grace]
    on_time = [at for at in due if now - at <= grace]
    if policy == "fire_all":
        fire = list(due[:max_catchup])
        return MisfirePlan(fire=tuple(fire), advance_to=fire[-1])
    if policy == "skip":
        return MisfirePlan(fire=tuple(on_time), missed=tuple(late), advance_to=due[-1])
    # fire_once
    fire = ([late[-1]] if late else []) + on_time
    return MisfirePlan(fire=tuple(fire), missed=tuple(late[:-1]), advance_to=due[-1])


# --- overlap -------------------------------------------------------------------------------

SERIAL_POLICIES = frozenset({"skip_if_running", "queue", "buffer_one", "replace"})


@dataclass(frozen=True)
class OverlapState:
    """What the schedule has in flight when new occurrences arrive."""

    running: int = 0
    waiting: int = 0  # pending attempts not yet started (first try or retry)
    retrying: int = 0  # of the waiting, those that failed a try and wait for the next


@dataclass(frozen=True)
class Admission:
    """Per new occurrence: ``"pending"`` or ``"skipped"``; plus whether to cancel the running."""

    statuses: tuple[str, ...]
    cancel_running: bool = False
    reasons: tuple[str, ...] = field(default=())
    cancel_waiting: bool = False  # replace: the schedule's waiting attempts are superseded


def admit(policy: str, state: OverlapState, count: int) -> Admission:
    """Decide, for ``count`` new occurrences in order, which wait to run and which are skipped."""
    if policy not in SERIAL_POLICIES and policy != "allow":
        raise ValueError(f"unknown overlap policy {policy!r}")
    if policy == "replace":
        return _replace(state, count)
    running, waiting = state.running, state.waiting
    statuses: list[str] = []
    reasons: list[str] = []
    for _ in range(count):
        # An attempt waiting for its retry is still in flight: the occurrence it is for has
        # not ended, so a later one would overlap it.
        if policy == "skip_if_running" and (running or state.retrying):
            statuses.append("skipped")
            reasons.append(
                "an attempt of this schedule was running (overlap=skip_if_running)"
                if running
                else "an earlier attempt of this schedule was waiting for its retry "
                "(overlap=skip_if_running)"
            )
            continue
        # The head of the line (running, or next to run when nothing runs) is not waiting;
        # one more may wait behind it.
        if policy == "buffer_one" and running + waiting >= 2:
            statuses.append("skipped")
            reasons.append("one occurrence was already waiting (overlap=buffer_one)")
            continue
        statuses.append("pending")
        reasons.append("")
        waiting += 1
    return Admission(statuses=tuple(statuses), reasons=tuple(reasons))


REPLACED = "replaced by a newer occurrence (overlap=replace)"


def _replace(state: OverlapState, count: int) -> Admission:
    """The newest occurrence runs; older ones, new or waiting, are superseded, and a running
    attempt is asked to stop: a short-interval schedule never builds a backlog."""
    if count == 0:
        return Admission(statuses=())
    return Admission(
        statuses=("skipped",) * (count - 1) + ("pending",),
        reasons=(REPLACED,) * (count - 1) + ("",),
        cancel_running=state.running > 0,
        cancel_waiting=state.waiting > 0,
    )


def is_serial(policy: str) -> bool:
    """Under every policy but ``allow`` at most one attempt of a schedule runs at a time."""
    return policy in SERIAL_POLICIES


# --- retry ---------------------------------------------------------------------------------


def _unit_fraction(*parts: object) -> float:
    """A deterministic number in [0, 1) derived from ``parts``: every worker computes the same."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def backoff(try_number: int, *, base: timedelta, cap: timedelta, key: str = "") -> timedelta:
    """``min(cap, base * 2 ** (n - 1))``, less up to 20 % of deterministic jitter.

    The jitter spreads retries of many attempts that failed together; deriving it from the
    attempt's key keeps it stable across workers and test runs.
    """
    if try_number < 1:
        raise ValueError("try_number starts at 1")
    # Double only while under the cap: ``base * 2 ** (n - 1)`` overflows timedelta long before
    # n reaches 62 when base is minutes or more.
    delay = base
    for _ in range(min(try_number - 1, 70)):  # 2**70 spans any two timedeltas
        if delay >= cap:
            break
        delay *= 2
    delay = min(delay, cap)
    spread = delay * 0.2 * _unit_fraction(key, try_number)
    return delay - spread


@dataclass(frozen=True)
class FailurePlan:
    """After a failed try: retry at ``retry_at``, or dead-letter (``retry_at`` is None)."""

    retry_at: datetime | None
    reason: str


def plan_failure(
    *,
    tries: int,
    max_attempts: int,
    now: datetime,
    base: timedelta,
    cap: timedelta,
    key: str,
    permanent: bool = False,
    uncertain: str = "",
) -> FailurePlan:
    """``uncertain``: the try marked itself uncertain and ended without telling its outcome
    (timed out, its process died), so the step it guarded may have happened."""
    if uncertain:
        return FailurePlan(
            None,
            f"the try marked itself uncertain ({uncertain}) and ended without an outcome: "
            "not re-run automatically",
        )
    if permanent:
        return FailurePlan(None, "permanent failure")
    if tries >= max_attempts:
        return FailurePlan(None, f"no tries left ({tries} of {max_attempts})")
    return FailurePlan(now + backoff(tries, base=base, cap=cap, key=key), "retry")


def plan_recovery(
    *,
    tries: int,
    max_attempts: int,
    recoveries: int,
    max_recoveries: int,
    delivery: str,
    uncertain: str = "",
) -> str | None:
    """A running attempt lost its worker: ``None`` to retry it, else the dead-letter reason.

    ``uncertain``: the reason its try gave when it marked itself uncertain, if it did.
    """
    if uncertain:
        return (
            f"its worker was lost after the try marked itself uncertain ({uncertain}): "
            "not re-run automatically"
        )
    if delivery == "at_most_once":
        return "its worker was lost mid-try; at_most_once: not re-run automatically (uncertain)"
    if recoveries + 1 >= max_recoveries:
        return f"lost its worker repeatedly ({recoveries + 1} times)"
    if tries >= max_attempts:
        return f"its worker was lost on the last try ({tries} of {max_attempts})"
    return None


def recovery_delay(recoveries: int, *, base: timedelta, cap: timedelta, key: str) -> timedelta:
    """How long a recovered attempt waits before its next try: not at all the first time (a
    worker died under it, most likely not because of it); after that, as a job that failed
    ``recoveries`` times, so a job that takes its worker down does not do so in a tight loop."""
    if recoveries < 1:
        return timedelta(0)
    return backoff(recoveries, base=base, cap=cap, key=f"recovery:{key}")


def should_pause(recent_statuses: Sequence[str], pause_after_failures: int | None) -> bool:
    """Auto-pause when the last ``pause_after_failures`` occurrences all ended dead-lettered."""
    if not pause_after_failures or len(recent_statuses) < pause_after_failures:
        return False
    return all(s == "dead_letter" for s in recent_statuses[:pause_after_failures])
