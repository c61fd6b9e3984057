"""``run_cadence`` on a database that was never migrated says what to do, in one line."""

import pytest

from tests.support.commands import run_django


@pytest.mark.process
def test_run_cadence_before_migrate_exits_at_once_saying_to_migrate(tmp_path):
    env = {
        "CADENCE_TEST_DB": "sqlite",
        "CADENCE_SQLITE_NAME": str(tmp_path / "never-migrated.sqlite3"),
    }
    result = run_django("run_cadence", "--settings=tests.settings", env=env, timeout=60)

    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "run `python manage.py migrate` first" in lines[0]
    assert "Traceback" not in result.stderr
