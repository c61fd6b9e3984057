"""The database's half of invariant 7: a trigger that refuses raw SQL changing an attempt's
identity, where the store may create one (``Store.has_identity_trigger``).

Every ORM path is guarded on every database by the model (``models/identity.py``). The
trigger adds raw SQL and other programs on PostgreSQL and SQLite, raising an integrity error
naming the column, with the same words; writing the same value passes. MariaDB/MySQL get no
trigger: with binary logging on, creating one needs privileges that managed services refuse.
The migration that installs it calls :func:`install`.

On SQLite, a migration that rebuilds the attempts table (``_remake_table``) drops its
triggers: such a migration must call :func:`install` again after it (the identity tests
fail otherwise).
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor

from ..exceptions import IdentityChanged
from . import of as store_of

# The columns of Attempt that make its identity (its unique constraint).
COLUMNS = ("schedule_id", "occurrence_at", "trigger")
NAME = "django_cadence_attempt_identity"
# The trigger's error: the words of the model's guard.
message = IdentityChanged.message


def install(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Create the trigger on the attempts table where the store may (a ``RunPython`` step)."""
    store = store_of(schema_editor.connection.alias)
    table = apps.get_model("django_cadence", "Attempt")._meta.db_table
    for statement in [*store.drop_identity_trigger_sql(table), *store.identity_trigger_sql(table)]:
        schema_editor.execute(statement, params=None)


def remove(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Drop the trigger (the migration's backward step)."""
    store = store_of(schema_editor.connection.alias)
    table = apps.get_model("django_cadence", "Attempt")._meta.db_table
    for statement in store.drop_identity_trigger_sql(table):
        schema_editor.execute(statement, params=None)
