"""``run_cadence --worker-id``: a value that could forge or hide a log line is refused by the
option's parser, naming the option, before anything starts."""

from __future__ import annotations

import pytest

from django_cadence.engine.loop import Engine
from django_cadence.engine.workers import MAX_WORKER_ID, check_worker_id
from tests.support.commands import run_django

BAD_IDS = [
    ("newline", "w1\n2026-01-01 00:00:00 ERROR forged"),
    ("carriage-return", "w1\rfake"),
    ("escape", "w1\x1b[31m"),
    ("space", "worker one"),
    ("tab", "w\t1"),
    ("bidi", "w\u202e1"),
    ("line-separator", "w\u20281"),
    ("too-long", "w" * (MAX_WORKER_ID + 1)),
    ("empty", ""),
]


@pytest.mark.process
@pytest.mark.parametrize("value", [v for _, v in BAD_IDS], ids=[n for n, _ in BAD_IDS])
def test_run_cadence_refuses_a_worker_id_that_could_forge_a_line(value, tmp_path):
    env = {"CADENCE_TEST_DB": "sqlite", "CADENCE_SQLITE_NAME": str(tmp_path / "unused.sqlite3")}
    result = run_django(
        "run_cadence", "--settings=tests.settings", "--worker-id", value, "--once", env=env
    )
    assert result.returncode == 2, result.stderr
    assert "error: argument --worker-id: a worker id" in result.stderr
    assert not any(line.startswith("2026") for line in result.stderr.splitlines())
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["w1", "host-1:4242:ab12cd", "é-worker", "w" * MAX_WORKER_ID])
def test_a_printable_worker_id_is_accepted(value):
    assert check_worker_id(value) == value


@pytest.mark.parametrize("value", [v for _, v in BAD_IDS if v], ids=[n for n, v in BAD_IDS if v])
def test_an_engine_refuses_the_same_worker_ids(value):
    with pytest.raises(ValueError, match="a worker id"):
        Engine(worker_id=value)
