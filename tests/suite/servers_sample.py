"""Two tests for ``tests/suite/test_servers_summary.py`` to run in a pytest of their own: one
marked ``servers``, one not. Not collected by the suite (the name is not ``test_*``)."""

import pytest


@pytest.mark.servers("row locks")
def test_needs_a_server():
    pass


def test_runs_anywhere():
    pass
