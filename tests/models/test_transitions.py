"""Each move of the attempt state machine, on the real database: it writes its target state
and its history entry from the state it leaves, and refuses from any other (its guard)."""

from datetime import timedelta

import pytest

from django_cadence.models import Attempt, Status
from django_cadence.models.transitions import ORPHANED, LostTry, history_entry

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)
TOKEN = "batch0001"


def attempt_in(status, schedule_at, clock, **fields):
    """A row in ``status``, of a schedule of its own, that the constraints accept, after one
    try. Every row has a claim token, so a move that refuses it refuses by its status."""
    now = clock.now()
    values = {"tries": 1, "worker": "w1", "started_at": now - MINUTE, "claim_token": TOKEN}
    if status == Status.RUNNING:
        values["lease_until"] = now + MINUTE
    elif status == Status.PENDING:
        values["retry_at"] = now + MINUTE
    else:
        values["finished_at"] = now - MINUTE
    return Attempt.objects.create(
        schedule=schedule_at(), occurrence_at=now - 2 * MINUTE, status=status, **values | fields
    )


def a_try(clock, result, error=""):
    return [
        history_entry(
            try_number=1,
            worker="w1",
            started_at=clock.now() - MINUTE,
            finished_at=clock.now(),
            result=result,
            error=error,
        )
    ]


# name: (the state it leaves, the move on a queryset of the row, the state it enters, the
# history it writes or None when it writes none)
MOVES = {
    "retry": (
        Status.RUNNING,
        lambda rows, clock: rows.to_retry(
            retry_at=clock.now() + MINUTE, error="boom", history=a_try(clock, "failed", "boom")
        ),
        Status.PENDING,
        "failed",
    ),
    "dead letter": (
        Status.RUNNING,
        lambda rows, clock: rows.to_dead_letter(
            now=clock.now(), error="boom", history=a_try(clock, "failed", "boom")
        ),
        Status.DEAD_LETTER,
        "failed",
    ),
    "cancel a running try": (
        Status.RUNNING,
        lambda rows, clock: rows.to_cancelled(
            now=clock.now(), reason="stop", history=a_try(clock, "cancelled", "stop")
        ),
        Status.CANCELLED,
        "cancelled",
    ),
    "cancel a pending attempt": (
        Status.PENDING,
        lambda rows, clock: rows.to_cancelled(now=clock.now(), reason="cancelled"),
        Status.CANCELLED,
        None,
    ),
    "hand back": (
        Status.RUNNING,
        lambda rows, clock: rows.handed_back(now=clock.now()),
        Status.PENDING,
        None,
    ),
    "retry a dead letter": (
        Status.DEAD_LETTER,
        lambda rows, clock: rows.to_pending_again(now=clock.now()),
        Status.PENDING,
        None,
    ),
    "reopen a missed record": (
        Status.MISSED,
        lambda rows, clock: rows.reopened(
            status=Status.PENDING,
            retry_at=clock.now(),
            finished_at=None,
            error="",
            history=a_try(clock, "missed"),
        ),
        Status.PENDING,
        "missed",
    ),
    "recover a lost try": (
        Status.RUNNING,
        lambda rows, clock: rows.recovered(
            [LostTry(rows.get(), "its lease expired", retry_at=clock.now())], now=clock.now()
        ),
        Status.PENDING,
        "lost",
    ),
    "recover a lost try into the dead letters": (
        Status.RUNNING,
        lambda rows, clock: rows.recovered(
            [LostTry(rows.get(), "its lease expired", dead_letter="at most once")],
            now=clock.now(),
        ),
        Status.DEAD_LETTER,
        "lost",
    ),
}
# The moves that write no history entry, and what each leaves: a flag, an instant, the row.
OTHER_MOVES = {
    "ask a running try to stop": (Status.RUNNING, lambda rows, clock: rows.ask_to_stop()),
    "mark a running try uncertain": (
        Status.RUNNING,
        lambda rows, clock: rows.mark_uncertain("charged the card"),
    ),
    "bring a retry forward": (
        Status.PENDING,
        lambda rows, clock: rows.brought_forward(now=clock.now()),
    ),
    "discard a dead letter": (Status.DEAD_LETTER, lambda rows, clock: rows.discarded()),
}
STATES = (
    Status.PENDING,
    Status.RUNNING,
    Status.SUCCEEDED,
    Status.DEAD_LETTER,
    Status.CANCELLED,
    Status.SKIPPED,
    Status.MISSED,
)


@pytest.mark.parametrize("name", MOVES)
def test_a_move_writes_its_state_and_its_history_entry(name, schedule_at, clock):
    leaves, move, enters, result = MOVES[name]
    attempt = attempt_in(leaves, schedule_at, clock)
    assert move(Attempt.objects.filter(pk=attempt.pk), clock) == 1
    attempt.refresh_from_db()
    assert attempt.status == enters
    assert attempt.lease_until is None
    if leaves == Status.RUNNING:
        assert attempt.claim_token is None or enters != Status.PENDING
    if result is None:
        assert attempt.history == []
    else:
        (entry,) = attempt.history
        assert entry["result"] == result
        assert entry["finished_at"] == clock.now().isoformat()


def test_the_moves_without_a_history_entry(schedule_at, clock):
    running, pending, dead = (
        attempt_in(status, schedule_at, clock)
        for status in (Status.RUNNING, Status.PENDING, Status.DEAD_LETTER)
    )
    for name, row in zip(OTHER_MOVES, (running, running, pending, dead), strict=True):
        assert OTHER_MOVES[name][1](Attempt.objects.filter(pk=row.pk), clock) == 1, name
    running.refresh_from_db()
    pending.refresh_from_db()
    assert (running.status, running.cancel_requested) == (Status.RUNNING, True)
    assert running.uncertain == "charged the card"
    assert (pending.status, pending.retry_at) == (Status.PENDING, clock.now())
    assert not Attempt.objects.filter(pk=dead.pk).exists()


def test_recovery_writes_what_the_seed_says_of_an_attempt_without_an_error(schedule_at, clock):
    attempt = attempt_in(Status.RUNNING, schedule_at, clock, recoveries=1)
    lost = LostTry(attempt, "its lease expired", dead_letter="too many recoveries")
    assert Attempt.objects.recovered([lost], now=clock.now()) == 1
    attempt.refresh_from_db()
    assert attempt.recoveries == 2
    assert attempt.finished_at == clock.now()
    assert attempt.error.startswith(f"{ORPHANED} (worker w1 was lost on try 1: its lease")
    assert attempt.error.endswith("\n[dead letter: too many recoveries]")


@pytest.mark.parametrize("name", [*MOVES, *OTHER_MOVES])
def test_a_move_refuses_a_row_in_any_other_state(name, schedule_at, clock):
    leaves, move = (MOVES | OTHER_MOVES)[name][:2]
    # One move cancels either a pending attempt or a running try.
    allowed = {Status.PENDING, Status.RUNNING} if name.startswith("cancel") else {leaves}
    for status in STATES:
        if status in allowed:
            continue
        attempt = attempt_in(status, schedule_at, clock)
        before = _fields(attempt)
        assert move(Attempt.objects.filter(pk=attempt.pk), clock) == 0, status
        assert _fields(Attempt.objects.get(pk=attempt.pk)) == before, status


FENCED = (
    "retry",
    "dead letter",
    "cancel a running try",
    "hand back",
    "ask a running try to stop",
    "mark a running try uncertain",
)


@pytest.mark.parametrize("name", FENCED)
def test_a_move_of_a_running_try_is_fenced_by_its_token(name, schedule_at, clock):
    """Invariant 3: a worker whose try was taken from it writes nothing (``held``)."""
    move = (MOVES | OTHER_MOVES)[name][1]
    attempt = attempt_in(Status.RUNNING, schedule_at, clock)
    before = _fields(attempt)
    assert move(Attempt.objects.held(attempt.pk, "another-token"), clock) == 0
    assert _fields(Attempt.objects.get(pk=attempt.pk)) == before
    assert move(Attempt.objects.held(attempt.pk, TOKEN), clock) == 1


def test_a_retry_brought_forward_must_be_waiting(schedule_at, clock):
    """A first try, or a retry already due, stays as it is: only a waiting retry moves."""
    first = attempt_in(Status.PENDING, schedule_at, clock, tries=0)
    due = attempt_in(Status.PENDING, schedule_at, clock, retry_at=clock.now() - MINUTE)
    for row in (first, due):
        assert Attempt.objects.filter(pk=row.pk).brought_forward(now=clock.now()) == 0


def _fields(attempt):
    return {
        f.attname: getattr(attempt, f.attname)
        for f in Attempt._meta.concrete_fields
        if f.attname != "id"
    }
