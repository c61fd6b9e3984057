"""The one-engine lock on a SQLite file names the database file when it refuses."""

from types import SimpleNamespace

import pytest

from django_cadence.store.sqlite import EngineAlreadyRunning, SingleEngineLock


def sqlite_connection(name):
    return SimpleNamespace(vendor="sqlite", settings_dict={"NAME": str(name)})


def test_a_second_engine_on_the_same_file_is_refused_with_the_database_file_named(tmp_path):
    database = tmp_path / "db.sqlite3"
    first = SingleEngineLock.for_connection(sqlite_connection(database))
    second = SingleEngineLock.for_connection(sqlite_connection(database))
    first.acquire()
    try:
        with pytest.raises(EngineAlreadyRunning) as refused:
            second.acquire()
    finally:
        first.release()

    message = str(refused.value)
    assert f"SQLite database {database.resolve()}." in message


def test_the_lock_lives_beside_the_database_file(tmp_path):
    lock = SingleEngineLock.for_connection(sqlite_connection(tmp_path / "db.sqlite3"))

    assert lock.path == (tmp_path / "db.sqlite3.cadence.lock").resolve()
    assert lock.database == (tmp_path / "db.sqlite3").resolve()
