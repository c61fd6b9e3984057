"""SQLite: one engine per database file, enforced with an OS file lock; the local clock.

SQLite has no row locks to share work safely between engines, so a second ``run_cadence``
on the same file must refuse to start rather than double-fire. The lock lives beside the
database file and is released by the OS when the process dies, even on ``kill -9``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from django.db.backends.base.base import BaseDatabaseWrapper

from ..exceptions import CadenceError
from . import identity_guard
from .base import Store


class EngineAlreadyRunning(CadenceError, RuntimeError):
    """Another engine already runs on this SQLite database."""


LOCK_SUFFIX = ".cadence.lock"


class SingleEngineLock:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fd: int | None = None

    @classmethod
    def for_connection(cls, connection: BaseDatabaseWrapper) -> SingleEngineLock:
        """A lock for a file-backed SQLite database; a no-op for an in-memory one."""
        name = str(connection.settings_dict.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:"):
            return cls(None)
        return cls(Path(name).resolve().with_name(Path(name).name + LOCK_SUFFIX))

    def acquire(self) -> None:
        if self.path is None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock_without_waiting(fd)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            raise EngineAlreadyRunning(
                f"Another run_cadence engine ({holder}) already runs on the SQLite database "
                f"{self.database}. SQLite supports one engine per database file; "
                "stop the other one, or use PostgreSQL or MariaDB to run several."
            ) from None
        _write_holder(fd, f"pid {os.getpid()}")
        self._fd = fd

    @property
    def database(self) -> Path | None:
        """The SQLite database file this lock guards."""
        if self.path is None:
            return None
        return self.path.with_name(self.path.name.removesuffix(LOCK_SUFFIX))

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _lock_without_waiting(fd: int) -> None:
    """Take an exclusive lock on the whole file or raise ``OSError`` at once.

    The platform's module is imported here, not at the top, so that importing the store (and
    so ``store.of()`` on any database) works on every platform.
    """
    if sys.platform == "win32":
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _read_holder(fd: int) -> str:
    """What the engine holding the lock wrote into the file (its pid), for the error."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        holder = os.read(fd, 200).decode(errors="replace").strip()
    except OSError:  # Windows refuses to read a range another process has locked
        holder = ""
    return holder or "another process"


def _write_holder(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, text.encode())


class SQLiteStore(Store):
    """One writer at a time and no row locks: one engine per database file."""

    vendor = "sqlite"
    one_engine_per_file = True
    has_concurrent_writes = False  # an open write transaction holds the whole file
    default_concurrency = 4  # one writer at a time: more threads only wait for its lock
    has_identity_trigger = True

    def identity_trigger_sql(self, table: str) -> list[str]:
        # RAISE takes a literal message: one trigger per column, each naming its own.
        return [
            f'CREATE TRIGGER {identity_guard.NAME}_{c} BEFORE UPDATE OF "{c}" ON "{table}" '
            f'FOR EACH ROW WHEN NEW."{c}" IS NOT OLD."{c}" '
            f"BEGIN SELECT RAISE(ABORT, '{identity_guard.message(table, c)}'); END"
            for c in identity_guard.COLUMNS
        ]

    def drop_identity_trigger_sql(self, table: str) -> list[str]:
        return [f"DROP TRIGGER IF EXISTS {identity_guard.NAME}_{c}" for c in identity_guard.COLUMNS]

    def engine_lock(self) -> SingleEngineLock:
        return SingleEngineLock.for_connection(self.connection)
