"""The tutorial's failure demo (step 9) run as the page says, from a fresh ``startproject``:
its code blocks copied into files and ``manage.py shell``, the engine started in a process,
and the log lines the page shows found in its output."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.fleet import wait_until
from tests.support.commands import run_python

pytestmark = pytest.mark.process

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"
FLAKY_SUCCEEDED = re.compile(r"attempt succeeded id=\d+ schedule=greet-flaky try=3 ")
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
# What differs from run to run in a log line: its time, ids, instants and the worker's name.
VARYING = (
    (re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ "), ""),
    (re.compile(r"\bid=\d+"), "id=N"),
    (re.compile(r"\bretry_at=\d\S*"), "retry_at=T"),
    (re.compile(r"\bworker=\S+"), "worker=W"),
)


def blocks(language: str, containing: str) -> list[str]:
    return [
        code
        for lang, code in BLOCK.findall(TUTORIAL.read_text())
        if lang == language and containing in code
    ]


def normalised(line: str) -> str:
    for pattern, replacement in VARYING:
        line = pattern.sub(replacement, line)
    return line.strip()


def suite_variables() -> list[str]:
    """The suite's own settings in the environment, which a fresh project must not see."""
    return [name for name in os.environ if name.startswith(("DJANGO_", "CADENCE_"))]


def manage(project: Path, *args: str) -> str:
    """``python manage.py ARGS`` in the tutorial's project, with none of the suite's settings."""
    result = run_python("manage.py", *args, cwd=project, unset=suite_variables())
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def project(tmp_path):
    """Steps 1 to 4 and 6: a fresh project, the tutorial's settings and job, migrated, and
    the schedule made in code."""
    started = run_python("-m", "django", "startproject", "mysite", str(tmp_path))
    assert started.returncode == 0, started.stderr
    manage(tmp_path, "startapp", "reports")
    (settings_block,) = blocks("python", "INSTALLED_APPS")
    with (tmp_path / "mysite" / "settings.py").open("a") as settings:
        settings.write("\n" + settings_block)
    (first_job,) = blocks("python", "def say_hello")[:1]
    (tmp_path / "reports" / "jobs.py").write_text(first_job)
    manage(tmp_path, "migrate", "--noinput")
    (in_code,) = blocks("python", "hello-every-minute")
    manage(tmp_path, "shell", "-c", in_code)
    return tmp_path


def test_the_failure_demo_shows_what_the_page_shows(project):
    path = project
    _, failing_job = blocks("python", "def say_hello")
    (make_two,) = blocks("python", "greet-{name}")
    (shown,) = blocks("text", "schedule=greet-nobody")

    # Step 9, with the engine stopped: the new job, two schedules run now, the engine again.
    (path / "reports" / "jobs.py").write_text(failing_job)
    manage(path, "shell", "-c", make_two)
    log = path / "engine.log"
    with log.open("wb") as out:
        engine = subprocess.Popen(
            [sys.executable, "manage.py", "run_cadence"],
            cwd=path,
            env={k: v for k, v in os.environ.items() if k not in suite_variables()}
            | {"PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def flaky_succeeded() -> bool:
        assert engine.poll() is None, log.read_text()
        return FLAKY_SUCCEEDED.search(log.read_text()) is not None

    try:
        wait_until(flaky_succeeded, timeout=90, message="greet-flaky's third try to succeed")
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.wait(60)

    printed = {normalised(line) for line in log.read_text().splitlines()}
    expected = [normalised(line) for line in shown.splitlines() if line.strip()]
    assert len(expected) == 5
    assert [line for line in expected if line not in printed] == []
