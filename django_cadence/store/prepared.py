"""Reads compiled once and run again with a new argument: the engine's hot queries.

Building and compiling a QuerySet costs the engine more CPU than the database spends running
the small reads it repeats on every tick (the claim's locking read, the due schedules, when to
wake next): about a millisecond each, against a tenth of that to run them. A ``PreparedRead``
compiles its ``values_list`` queryset once per database and shape, with a stand-in value for
its one argument, and afterwards only swaps the argument in, adapted by its model field
exactly as the ORM would; rows go through the converters the ORM would apply. A read without
an argument is compiled once and run as it is. What runs is the SQL Django wrote, so every
backend keeps its own dialect, locking clause and conversions.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.db import connections
from django.db.models import Field, QuerySet

if TYPE_CHECKING:
    from django.db.models.sql.compiler import SQLCompiler

# Two distinct stand-ins: the one parameter that differs between the two compilations is the
# argument's.
_STAND_INS = (
    datetime(2001, 2, 3, 4, 5, 6, 789012, tzinfo=UTC),
    datetime(2002, 3, 4, 5, 6, 7, 890123, tzinfo=UTC),
)


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slot: int | None  # where the argument goes in params; None: the read takes none
    compiler: Any
    converters: dict[Any, Any]


class PreparedRead:
    """``build(shape, value)`` returns a ``values_list(*fields)`` queryset in which ``value``
    (a datetime, adapted like ``field``) is the only parameter that depends on the call.

    With ``field=None`` the read takes no argument: ``build(shape, None)`` is compiled once.
    """

    def __init__(
        self,
        build: Callable[[Any, Any], QuerySet[Any, Any]],
        fields: tuple[str, ...],
        field: Field[Any, Any] | None,
    ) -> None:
        self.build = build
        self.row: Any = namedtuple(  # type: ignore[misc]  # field names known at run time
            "Row", [name.replace("__", "_") for name in fields]
        )
        self.field = field
        self._compiled: dict[tuple[str, str, Hashable], _Compiled] = {}

    def rows(
        self, using: str, shape: Hashable, value: datetime | None = None, *, setup: str = ""
    ) -> list[Any]:
        """Run the read (inside the caller's transaction, if any) and return named rows.

        ``setup``, a statement without parameters, runs just before the read: in the same
        round trip where the driver allows it (psycopg 3's client-side binding cursor).
        """
        connection = connections[using]
        key = (using, connection.vendor, shape)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self._compile(using, shape)
        params = list(compiled.params)
        if compiled.slot is not None and self.field is not None:
            params[compiled.slot] = self.field.get_db_prep_value(value, connection)
        with connection.cursor() as cursor:
            if setup and _sends_statements_together(cursor):
                cursor.execute(f"{setup}; {compiled.sql}", params)
                cursor.nextset()
            else:
                if setup:
                    cursor.execute(setup)
                cursor.execute(compiled.sql, params)
            fetched = cursor.fetchall()
        if compiled.converters:
            fetched = compiled.compiler.apply_converters(fetched, compiled.converters)
        return [self.row._make(values) for values in fetched]

    def _compile(self, using: str, shape: Hashable) -> _Compiled:
        if self.field is None:
            compiler, sql, params = self._compile_with(using, shape, None)
            return self._compiled_as(compiler, sql, params, slot=None)
        (compiler, sql, params), (_, other_sql, other_params) = (
            self._compile_with(using, shape, stand_in) for stand_in in _STAND_INS
        )
        differing = [i for i, (a, b) in enumerate(zip(params, other_params, strict=True)) if a != b]
        if sql != other_sql or len(differing) != 1:
            raise RuntimeError("a prepared read must have exactly one parameter that varies")
        return self._compiled_as(compiler, sql, params, slot=differing[0])

    @staticmethod
    def _compiled_as(
        compiler: SQLCompiler, sql: str, params: tuple[Any, ...], *, slot: int | None
    ) -> _Compiled:
        return _Compiled(
            sql=sql,
            params=params,
            slot=slot,
            compiler=compiler,
            converters=compiler.get_converters([column for column, _, _ in compiler.select]),
        )

    def _compile_with(
        self, using: str, shape: Hashable, stand_in: datetime | None
    ) -> tuple[SQLCompiler, str, tuple[Any, ...]]:
        compiler = self.build(shape, stand_in).query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        return compiler, sql, tuple(params)


def _sends_statements_together(cursor: Any) -> bool:
    """Whether several statements with parameters go in one ``execute`` and come back as one
    result set each: psycopg 3's ``ClientCursor``, Django's default on PostgreSQL."""
    try:
        from psycopg import ClientCursor
    except ImportError:  # psycopg2, or no PostgreSQL driver at all
        return False
    return isinstance(getattr(cursor, "cursor", None), ClientCursor)
