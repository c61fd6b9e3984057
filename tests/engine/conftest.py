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


@pytest.fixture
def lock_freed():
    """Wait until the server no longer sees a worker's session lock held. Closing a session
    frees its locks once the server has ended it, a moment after the client hung up (longer
    on a loaded machine): a test that reads the lock as gone right after closing it, or takes
    it again in the next test, waits for that first."""
    from benchmarks.fleet import wait_until
    from django_cadence.engine import liveness

    def wait(worker_id: str) -> None:
        wait_until(
            lambda: not liveness.still_held(worker_id),
            timeout=10,
            interval=0.01,
            message=f"the server to free the session lock of {worker_id}",
        )

    return wait
