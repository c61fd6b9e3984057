"""The statements of a busy worker's round, as plain SQL: plan a batch of schedules (count
their open attempts, insert the new ones, advance their slots), start a batch of tries, and
end a batch of them in success.

Through the ORM, building and compiling these statements (an expression per column, a
``CASE`` per row) cost a worker more CPU than the database spent running them, once per
batch: a millisecond or more each, on every tick. They are written here once per database
instead: the columns come from the model, values are
adapted the way the model's fields adapt them, and what differs between databases (joining
a string to a number, typing a JSON parameter, passing a list) is spelled out per vendor.
The fences of invariant 3 are the same as everywhere: ``claim_token`` and ``status``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections

from ..models import Attempt, Schedule, Status, Trigger


def _names(using: str, model=Attempt) -> tuple[Any, str, Callable[[str], str]]:
    """The connection, ``model``'s table quoted for it, and its columns by field name."""
    connection = connections[using]
    quote = connection.ops.quote_name
    return (
        connection,
        quote(model._meta.db_table),
        lambda name: quote(model._meta.get_field(name).column),
    )


def _in(column: str, values: Sequence[Any], vendor: str) -> tuple[str, list[Any]]:
    """``column`` (quoted) among ``values``: one array parameter on PostgreSQL, else a list."""
    if vendor == "postgresql":
        if all(type(v) is int for v in values):
            return f"{column} = ANY(%s::bigint[])", [_array_literal(values)]
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


def _array_literal(values: Sequence[int | datetime | None]) -> str:
    """A PostgreSQL array of integers or instants, as the text of its literal.

    The driver quotes a list element by element, escaping each: for the few thousand values
    of a planned batch that cost more CPU than the database spent inserting them. Integers
    and ISO 8601 instants hold no character an array literal must escape (no quote, comma,
    brace, backslash or space), so their text is joined as it is, and the driver quotes one
    string. A cast in the statement gives the array its type.
    """
    return "{%s}" % ",".join(  # noqa: UP031 - braces are the literal's own
        "NULL" if v is None else v.isoformat() if isinstance(v, datetime) else str(int(v))
        for v in values
    )


def _token_of_id(vendor: str, id_column: str) -> str:
    """A new claim token: the batch's random prefix (a parameter), then the row's id."""
    if vendor == "postgresql":
        return f"(%s || {id_column}::text)"
    if vendor == "mysql":
        return f"CONCAT(%s, {id_column})"
    return f"(%s || {id_column})"


def open_attempt_counts(using: str, schedule_ids: Sequence[int]) -> list[tuple[int, str, int]]:
    """``(schedule_id, status, count)`` of the pending and running attempts of the schedules."""
    if not schedule_ids:
        return []
    connection, table, column = _names(using)
    where, where_params = _in(column("schedule"), schedule_ids, connection.vendor)
    sql = (
        f"SELECT {column('schedule')}, {column('status')}, COUNT(*) FROM {table} "  # noqa: S608
        f"WHERE {where} AND {column('status')} IN (%s, %s) "
        f"GROUP BY {column('schedule')}, {column('status')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*where_params, Status.PENDING, Status.RUNNING])
        return cursor.fetchall()


def advance_schedules(
    using: str,
    ids: Sequence[int],
    *,
    next_run_at: datetime | None,
    last_run_at: datetime | None,
    fired: int,
    missed: int,
) -> None:
    """Move the schedules' slot and add to their counters (in SQL, from what was planned)."""
    connection, table, column = _names(using, Schedule)
    ops = connection.ops
    where, where_params = _in(column("id"), ids, connection.vendor)
    sql = (
        f"UPDATE {table} SET {column('next_run_at')} = %s, "  # noqa: S608
        f"{column('last_run_at')} = %s, "
        f"{column('occurrence_count')} = {column('occurrence_count')} + %s, "
        f"{column('missed_count')} = {column('missed_count')} + %s WHERE {where}"
    )
    params = [
        ops.adapt_datetimefield_value(next_run_at),
        ops.adapt_datetimefield_value(last_run_at),
        fired,
        missed,
        *where_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def start_tries(
    using: str, ids: Sequence[int], *, batch: str, worker: str, now: datetime, lease_until: datetime
) -> int:
    """Mark the claimed attempts running for ``worker``: token ``batch + id``, one more try."""
    connection, table, column = _names(using)
    vendor, adapt = connection.vendor, connection.ops
    where, where_params = _in(column("id"), ids, vendor)
    # Model identifiers and placeholders only: nothing user-supplied is spliced in.
    sql = (
        f"UPDATE {table} SET {column('status')} = %s, "  # noqa: S608
        f"{column('claim_token')} = {_token_of_id(vendor, column('id'))}, "
        f"{column('lease_until')} = %s, {column('worker')} = %s, "
        f"{column('tries')} = {column('tries')} + 1, {column('started_at')} = %s, "
        f"{column('cancel_requested')} = %s WHERE {where}"
    )
    params = [
        Status.RUNNING,
        batch,
        adapt.adapt_datetimefield_value(lease_until),
        worker,
        adapt.adapt_datetimefield_value(now),
        False,
        *where_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def end_in_success(
    using: str,
    tokens: dict[int, str],
    *,
    now: datetime,
    outcomes: dict[int, Any],
    histories: dict[int, list],
) -> int:
    """Fenced: mark the tries holding ``tokens`` (by attempt id) succeeded, each with its own
    outcome and history; returns how many rows were still held and changed."""
    connection, table, column = _names(using)
    vendor, adapt = connection.vendor, connection.ops
    ids = list(tokens)
    outcome_sql, outcome_params = _per_row(column("id"), outcomes, vendor)
    history_sql, history_params = _per_row(column("id"), histories, vendor)
    by_id, id_params = _in(column("id"), ids, vendor)
    by_token, token_params = _in(column("claim_token"), list(tokens.values()), vendor)
    sql = (
        f"UPDATE {table} SET {column('status')} = %s, {column('finished_at')} = %s, "  # noqa: S608
        f"{column('outcome')} = {outcome_sql}, {column('lease_until')} = NULL, "
        f"{column('error')} = %s, {column('history')} = {history_sql} "
        f"WHERE {by_id} AND {by_token} AND {column('status')} = %s"
    )
    params = [
        Status.SUCCEEDED,
        adapt.adapt_datetimefield_value(now),
        *outcome_params,
        "",
        *history_params,
        *id_params,
        *token_params,
        Status.RUNNING,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _per_row(id_column: str, values: dict[int, Any], vendor: str) -> tuple[str, list[Any]]:
    """A JSON value per row: one parameter if every row gets the same JSON, else a ``CASE``.

    Values are dumped as the model's JSONField dumps them (``json.dumps``, no encoder), so
    ``None`` is JSON ``null``, as the ORM writes it for a JSON value.
    """
    dumped = {pk: json.dumps(value) for pk, value in values.items()}
    cast = "CAST({} AS jsonb)" if vendor == "postgresql" else "{}"
    if len(set(dumped.values())) == 1:
        return cast.format("%s"), [next(iter(dumped.values()))]
    whens = " ".join(["WHEN %s THEN %s"] * len(dumped))
    params = [item for pair in dumped.items() for item in pair]
    return cast.format(f"CASE {id_column} {whens} END"), params


# The planner's rows: what varies per row is a parameter; the rest is each column's default
# for a new attempt, spelled in SQL once.
_PLANNED_COLUMNS = (
    "schedule",
    "occurrence_at",
    "trigger",
    "status",
    "retry_at",
    "finished_at",
    "error",
    "outcome",
    "created_at",
)
_NEW_ATTEMPT_DEFAULTS = {
    "tries": "0",
    "recoveries": "0",
    "cancel_requested": "FALSE",
    "history": "'[]'",
    "worker": "''",
    "claim_token": "NULL",
    "lease_until": "NULL",
    "started_at": "NULL",
}


@dataclass(frozen=True, slots=True)
class PlannedRow:
    """A new attempt as the planner and backfill make it: the columns that vary, and the
    schedule's name for the log (a model instance per row cost more than writing it)."""

    schedule_id: int
    schedule_name: str
    occurrence_at: datetime
    status: str
    trigger: str = Trigger.SCHEDULE
    retry_at: datetime | None = None
    finished_at: datetime | None = None
    error: str = ""
    outcome: Any = None


def insert_planned(using: str, rows: Sequence[PlannedRow], *, now: datetime) -> None:
    """Insert new attempts (the planner's: pending, skipped or missed), skipping any whose
    (schedule, occurrence, trigger) exists already: invariant 1's quiet no-op.

    Only the planner's columns are read from each row (an ``Attempt`` has them too); every
    other column gets a new attempt's default, and ``created_at`` is ``now`` for the batch.
    """
    if not rows:
        return
    connection, table, column = _names(using)
    vendor, ops = connection.vendor, connection.ops
    fields = [Attempt._meta.get_field(name) for name in _PLANNED_COLUMNS]
    columns = [column(name) for name in (*_PLANNED_COLUMNS, *_NEW_ATTEMPT_DEFAULTS)]
    json_param = "CAST(%s AS jsonb)" if vendor == "postgresql" else "%s"
    row_sql = "({})".format(
        ", ".join(
            [json_param if f.name == "outcome" else "%s" for f in fields]
            + list(_NEW_ATTEMPT_DEFAULTS.values())
        )
    )
    adapt = ops.adapt_datetimefield_value
    created = adapt(now)
    values = [
        (
            row.schedule_id,
            adapt(row.occurrence_at),
            row.trigger,
            row.status,
            adapt(row.retry_at),
            adapt(row.finished_at),
            row.error,
            None if row.outcome is None else json.dumps(row.outcome),
            created,
        )
        for row in rows
    ]
    if vendor == "postgresql":
        _insert_planned_as_arrays(connection, table, fields, columns, values)
        return
    insert = "INSERT IGNORE" if vendor == "mysql" else "INSERT OR IGNORE"
    limit = connection.features.max_query_params or 65535
    per_statement = max(1, min(1000, limit // len(fields)))
    with connection.cursor() as cursor:
        for start in range(0, len(values), per_statement):
            chunk = values[start : start + per_statement]
            sql = (
                f"{insert} INTO {table} ({', '.join(columns)}) "
                f"VALUES {', '.join([row_sql] * len(chunk))}"
            )
            cursor.execute(sql, [value for row in chunk for value in row])


def _insert_planned_as_arrays(
    connection, table: str, fields, columns: list[str], values: list[tuple]
) -> None:
    """PostgreSQL: one array per column that varies, unnested into rows, and one parameter
    per column that holds the same value in every row (a burst's status, trigger and
    ``created_at``; a pending row's empty error). The statement's text depends only on which
    columns vary, not on the batch size: a ``VALUES`` list with a placeholder per value is
    new text for every batch, and the driver splits and quotes thousands of placeholders.
    """
    selected, arrays, names, params, array_params = [], [], [], [], []
    for i, (field, column_values) in enumerate(zip(fields, zip(*values, strict=True), strict=True)):
        is_json = field.name == "outcome"
        sql_type = "text" if is_json else field.db_type(connection)
        first = column_values[0]
        if all(v == first for v in column_values):
            expression = f"%s::{sql_type}"
            params.append(first)
        else:
            name = f"c{i}"
            names.append(name)
            arrays.append(f"%s::{sql_type}[]")
            literal = sql_type in ("bigint", "integer", "timestamp with time zone")
            array_params.append(_array_literal(column_values) if literal else list(column_values))
            expression = name
        selected.append(f"CAST({expression} AS jsonb)" if is_json else expression)
    source = f"FROM unnest({', '.join(arrays)}) AS planned({', '.join(names)}) " if arrays else ""
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"SELECT {', '.join(selected + list(_NEW_ATTEMPT_DEFAULTS.values()))} "
        f"{source}ON CONFLICT DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params + array_params)  # the SELECT's scalars, then the arrays
