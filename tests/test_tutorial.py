"""The tutorial's failure demo (step 9) run as the page says, from a fresh ``startproject``:
its code blocks copied into files and ``manage.py shell``, the engine started in a process,
and the log lines the page shows found in its output."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"
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


def manage(project: Path, *args: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def project(tmp_path):
    """Steps 1 to 4 and 6: a fresh project, the tutorial's settings and job, migrated, and
    the schedule made in code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CADENCE_"))} | {
        "PYTHONUNBUFFERED": "1"
    }
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "mysite", str(tmp_path)],
        env=env,
        check=True,
        timeout=60,
    )
    manage(tmp_path, "startapp", "reports", env=env)
    (settings_block,) = blocks("python", "INSTALLED_APPS")
    with (tmp_path / "mysite" / "settings.py").open("a") as settings:
        settings.write("\n" + settings_block)
    (first_job,) = blocks("python", "def say_hello")[:1]
    (tmp_path / "reports" / "jobs.py").write_text(first_job)
    manage(tmp_path, "migrate", "--noinput", env=env)
    (in_code,) = blocks("python", "hello-every-minute")
    manage(tmp_path, "shell", "-c", in_code, env=env)
    return tmp_path, env


def test_the_failure_demo_shows_what_the_page_shows(project):
    path, env = project
    _, failing_job = blocks("python", "def say_hello")
    (make_two,) = blocks("python", "greet-{name}")
    (shown,) = blocks("text", "schedule=greet-nobody")

    # Step 9, with the engine stopped: the new job, two schedules run now, the engine again.
    (path / "reports" / "jobs.py").write_text(failing_job)
    manage(path, "shell", "-c", make_two, env=env)
    log = path / "engine.log"
    with log.open("wb") as out:
        engine = subprocess.Popen(
            [sys.executable, "manage.py", "run_cadence"],
            cwd=path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while "schedule=greet-flaky try=3" not in log.read_text():
            assert engine.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.wait(60)

    printed = {normalised(line) for line in log.read_text().splitlines()}
    expected = [normalised(line) for line in shown.splitlines() if line.strip()]
    assert len(expected) == 5
    assert [line for line in expected if line not in printed] == []
