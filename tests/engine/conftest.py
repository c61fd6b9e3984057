"""Fixtures shared by the engine's tests."""

import pytest

from tests import jobs


@pytest.fixture
def gate():
    """``tests.jobs.wait_at_gate`` blocks until the test sets this event."""
    jobs.GATE.clear()
    jobs.CALLS.clear()
    yield jobs.GATE
    jobs.GATE.set()  # no thread stays blocked after the test
