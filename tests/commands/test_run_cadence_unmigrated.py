"""``run_cadence`` on a database that was never migrated says what to do, in one line."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_run_cadence_before_migrate_exits_at_once_saying_to_migrate(tmp_path):
    env = {
        **os.environ,
        "CADENCE_TEST_DB": "sqlite",
        "CADENCE_SQLITE_NAME": str(tmp_path / "never-migrated.sqlite3"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "django", "run_cadence", "--settings=tests.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "run `python manage.py migrate` first" in lines[0]
    assert "Traceback" not in result.stderr
