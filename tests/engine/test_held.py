"""A held try's phase moves only as ``held.MOVES`` allows (docs/design.md, "A try on its
worker")."""

from types import SimpleNamespace
from typing import Any

import pytest

from django_cadence.engine.held import MOVES, STOPPED, Held, InvalidMove, Phase


def held_in(phase: Phase) -> Held:
    claim: Any = SimpleNamespace(attempt_id=7)
    return Held(claim, phase=phase)


def test_every_phase_has_its_moves_and_a_try_ends_in_a_stopped_one():
    assert set(MOVES) == set(Phase)
    ends = {phase for phase, moves in MOVES.items() if not moves}
    assert ends == STOPPED - {Phase.EXPIRED}  # an expired try is given up or handed back


def test_a_try_moves_along_its_life():
    held = held_in(Phase.CLAIMED)
    for phase in (Phase.AHEAD, Phase.QUEUED, Phase.HANDED, Phase.RUNNING, Phase.FINISHED):
        held.move(phase)
    held.move(Phase.RECORDED)
    assert held.phase is Phase.RECORDED


@pytest.mark.parametrize(
    ("start", "to"),
    [
        (Phase.AHEAD, Phase.RUNNING),  # its instant has not come: no thread has it
        (Phase.FINISHED, Phase.EXPIRED),  # it ended while its claim held: recorded instead
        (Phase.RECORDED, Phase.LOST),
        (Phase.QUEUED, Phase.TIMED_OUT),  # not started: handed back, never timed out
        (Phase.LOST, Phase.RECORDED),  # a lost try's result is never recorded
    ],
)
def test_a_move_its_phase_does_not_allow_raises_and_changes_nothing(start, to):
    held = held_in(start)
    with pytest.raises(InvalidMove, match=f"attempt id=7: a try {start.value} cannot be"):
        held.move(to)
    assert held.phase is start


def test_a_thread_does_not_move_a_try_that_was_stopped_meanwhile():
    held = held_in(Phase.HANDED)
    held.move(Phase.LOST)
    assert not held.advance(Phase.RUNNING)
    assert held.phase is Phase.LOST


def test_the_watchdog_leaves_a_finished_try_to_be_recorded():
    held = held_in(Phase.FINISHED)
    assert not held.stop(Phase.EXPIRED, unless=STOPPED | {Phase.FINISHED})
    assert held.phase is Phase.FINISHED
