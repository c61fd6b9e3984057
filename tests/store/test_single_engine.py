"""The one-engine lock on a SQLite file names the database file when it refuses."""

import os
import subprocess
import sys
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


def test_the_refusal_names_the_pid_of_the_engine_holding_the_lock(tmp_path):
    database = tmp_path / "db.sqlite3"
    first = SingleEngineLock.for_connection(sqlite_connection(database))
    first.acquire()
    try:
        with pytest.raises(EngineAlreadyRunning) as refused:
            SingleEngineLock.for_connection(sqlite_connection(database)).acquire()
    finally:
        first.release()

    assert f"(pid {os.getpid()})" in str(refused.value)


def test_the_stores_import_on_a_platform_without_fcntl():
    """``store.of()`` must work where ``fcntl`` is missing (the package says OS independent)."""
    blocked = (
        "import sys; sys.modules['fcntl'] = None\n"
        "import django_cadence.store.sqlite, django_cadence.store.postgresql\n"
        "import django_cadence.store.mysql\n"
    )
    subprocess.run([sys.executable, "-c", blocked], check=True, timeout=60)
