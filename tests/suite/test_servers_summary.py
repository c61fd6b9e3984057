"""A run of the suite on SQLite says how many tests it skipped for want of PostgreSQL or
MariaDB, and how to run them (``tests/conftest.py``): a green run on SQLite never ran them."""

from tests.support.commands import run_python

SAMPLE = "tests/suite/servers_sample.py"


def run_sample(tmp_path, database: str):
    env = {
        "CADENCE_TEST_DB": database,
        "CADENCE_SQLITE_NAME": str(tmp_path / "sample.sqlite3"),
        "CADENCE_SQLITE_TEST_NAME": str(tmp_path / "sample-test.sqlite3"),
    }
    plugins_off = ("-p", "no:randomly", "-p", "no:cacheprovider")
    return run_python("-m", "pytest", SAMPLE, *plugins_off, env=env)


def test_a_run_on_sqlite_ends_saying_how_many_tests_need_a_server_and_how_to_run_them(tmp_path):
    result = run_sample(tmp_path, "sqlite")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert "1 passed, 1 skipped" in lines[-1]
    assert lines[-2] == (
        "1 test(s) skipped because the database is SQLite: they need PostgreSQL or MariaDB. "
        "Run them with CADENCE_TEST_DB=postgresql (or mysql) pytest, or make test-postgresql "
        "test-mysql."
    )
    skip = "SKIPPED [1] tests/suite/servers_sample.py:7: needs PostgreSQL or MariaDB: row locks"
    assert skip in result.stdout
