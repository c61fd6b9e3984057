"""A database trigger that refuses to change an attempt's identity, per vendor.

An attempt's schedule, occurrence and trigger are fixed once written (invariant 7 of
docs/design.md). Only the database sees every write (``save()`` of a deferred or a fresh
instance, ``QuerySet.update()``, ``bulk_update()``, raw SQL), so it is the database that
refuses: a ``BEFORE UPDATE`` trigger raises an integrity error naming the column, and the
statement writes nothing. Writing the same value passes. The migration that installs it
calls :func:`install`.

On SQLite, a migration that rebuilds the attempts table (``_remake_table``) drops its
triggers: such a migration must call :func:`install` again after it (the identity tests
fail otherwise).
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor

# The columns of Attempt that make its identity (its unique constraint).
COLUMNS = ("schedule_id", "occurrence_at", "trigger")
NAME = "django_cadence_attempt_identity"
# MariaDB's "CHECK constraint failed": Django raises IntegrityError for it, as for the others.
_MYSQL_CONSTRAINT_ERRNO = 4025


def message(table: str, column: str) -> str:
    """The error for a write that changes ``column``: the field, and why it cannot change."""
    return (
        f"{table}.{column} cannot change: the schedule, occurrence and trigger of an attempt "
        f"are its identity (invariant 7, docs/design.md); create a new attempt instead"
    )


def _postgresql(table: str) -> list[str]:
    checks = "".join(
        f'IF NEW."{c}" IS DISTINCT FROM OLD."{c}" THEN RAISE EXCEPTION USING '
        f"ERRCODE = 'integrity_constraint_violation', MESSAGE = '{message(table, c)}'; END IF; "
        for c in COLUMNS
    )
    columns = ", ".join(f'"{c}"' for c in COLUMNS)
    function = (
        f"CREATE OR REPLACE FUNCTION {NAME}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {checks}RETURN NEW; END $$"
    )
    # "UPDATE OF": the engine's writes, which never name these columns, skip it entirely.
    trigger = (
        f'CREATE TRIGGER {NAME} BEFORE UPDATE OF {columns} ON "{table}" '
        f"FOR EACH ROW EXECUTE FUNCTION {NAME}()"
    )
    return [function, trigger]


def _mysql(table: str) -> list[str]:
    checks = "".join(
        f"IF NOT (NEW.`{c}` <=> OLD.`{c}`) THEN SIGNAL SQLSTATE '23000' SET "
        f"MYSQL_ERRNO = {_MYSQL_CONSTRAINT_ERRNO}, MESSAGE_TEXT = '{message(table, c)}'; END IF; "
        for c in COLUMNS
    )
    return [f"CREATE TRIGGER {NAME} BEFORE UPDATE ON `{table}` FOR EACH ROW BEGIN {checks}END"]


def _sqlite(table: str) -> list[str]:
    # RAISE takes a literal message: one trigger per column, each naming its own.
    return [
        f'CREATE TRIGGER {NAME}_{c} BEFORE UPDATE OF "{c}" ON "{table}" FOR EACH ROW '
        f'WHEN NEW."{c}" IS NOT OLD."{c}" BEGIN SELECT RAISE(ABORT, \'{message(table, c)}\'); END'
        for c in COLUMNS
    ]


def _drop(vendor: str, table: str) -> list[str]:
    if vendor == "postgresql":
        return [f'DROP TRIGGER IF EXISTS {NAME} ON "{table}"', f"DROP FUNCTION IF EXISTS {NAME}()"]
    if vendor == "sqlite":
        return [f"DROP TRIGGER IF EXISTS {NAME}_{c}" for c in COLUMNS]
    return [f"DROP TRIGGER IF EXISTS {NAME}"]


_INSTALL = {"postgresql": _postgresql, "mysql": _mysql, "sqlite": _sqlite}


def install(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Create the trigger on the attempts table (a ``RunPython`` forward step)."""
    build = _INSTALL.get(schema_editor.connection.vendor)
    if build is None:
        return  # another database: the model's save() guard alone
    table = apps.get_model("django_cadence", "Attempt")._meta.db_table
    for statement in [*_drop(schema_editor.connection.vendor, table), *build(table)]:
        schema_editor.execute(statement, params=None)


def remove(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Drop the trigger (the migration's backward step)."""
    if schema_editor.connection.vendor not in _INSTALL:
        return
    table = apps.get_model("django_cadence", "Attempt")._meta.db_table
    for statement in _drop(schema_editor.connection.vendor, table):
        schema_editor.execute(statement, params=None)
