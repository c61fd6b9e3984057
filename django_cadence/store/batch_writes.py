"""The statements of a busy worker's round, as plain SQL: plan a batch of schedules (count
their open attempts, insert the new ones, advance their slots), start a batch of tries, and
end a batch of them in success. Three are moves of the attempt state machine, guarded as
the others are (``models/transitions.py`` lists them all): plan, start and succeed.

Through the ORM, building and compiling these statements (an expression per column, a
``CASE`` per row) costs a worker more CPU than the database spends running them, on every
tick. They are written here once instead: the columns come from the model, values are
adapted the way the model's fields adapt them, and what differs between databases (joining
a string to a number, typing a JSON parameter, passing a list) is asked of the store.
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
from . import of as store_of
from .base import Store


def _names(
    using: str, model: type[Attempt] | type[Schedule] = Attempt
) -> tuple[Any, str, Callable[[str], str]]:
    """The connection, ``model``'s table quoted for it, and its columns by field name."""
    connection = connections[using]
    quote = connection.ops.quote_name
    fields = {f.name: str(f.column) for f in model._meta.concrete_fields}
    return connection, quote(model._meta.db_table), lambda name: quote(fields[name])


def open_attempt_counts(using: str, schedule_ids: Sequence[int]) -> list[tuple[int, str, int, int]]:
    """``(schedule_id, status, count, retried)`` of the pending and running attempts of the
    schedules; ``retried`` counts those that have had a try."""
    if not schedule_ids:
        return []
    connection, table, column = _names(using)
    where, where_params = store_of(using).in_list(column("schedule"), schedule_ids)
    sql = (
        f"SELECT {column('schedule')}, {column('status')}, COUNT(*), "  # noqa: S608
        f"SUM(CASE WHEN {column('tries')} > 0 THEN 1 ELSE 0 END) FROM {table} "
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
    where, where_params = store_of(using).in_list(column("id"), ids)
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
    """pending -> running, for the claimed attempts: token ``batch + id``, one more try, a
    lease for ``worker``, started at ``now`` or, for a try claimed ahead of its ready time,
    at that time; returns how many it started.

    Its guard is the claim's locking read of these pending rows, in the same transaction:
    the statement names the rows by primary key only, since a condition on ``status`` lets
    InnoDB find them through the status index and lock other workers' rows (a deadlock).
    """
    connection, table, column = _names(using)
    store, adapt = store_of(using), connection.ops
    where, where_params = store.in_list(column("id"), ids)
    # Model identifiers and placeholders only: nothing user-supplied is spliced in.
    sql = (
        f"UPDATE {table} SET {column('status')} = %s, "  # noqa: S608
        f"{column('claim_token')} = {store.token_of_id(column('id'))}, "
        f"{column('lease_until')} = %s, {column('worker')} = %s, "
        f"{column('tries')} = {column('tries')} + 1, "
        f"{column('started_at')} = CASE WHEN {column('retry_at')} > %s "
        f"THEN {column('retry_at')} ELSE %s END, "
        f"{column('cancel_requested')} = %s WHERE {where}"
    )
    params = [
        Status.RUNNING,
        batch,
        adapt.adapt_datetimefield_value(lease_until),
        worker,
        adapt.adapt_datetimefield_value(now),
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
    histories: dict[int, list[Any]],
) -> int:
    """running -> succeeded, fenced: the tries holding ``tokens`` (by attempt id), each with
    its own outcome and history; returns how many rows were still held and changed."""
    connection, table, column = _names(using)
    store, adapt = store_of(using), connection.ops
    ids = list(tokens)
    outcome_sql, outcome_params = _per_row(store, column("id"), outcomes)
    history_sql, history_params = _per_row(store, column("id"), histories)
    by_id, id_params = store.in_list(column("id"), ids)
    by_token, token_params = store.in_list(column("claim_token"), list(tokens.values()))
    sql = (
        f"UPDATE {table} SET {column('status')} = %s, {column('finished_at')} = %s, "  # noqa: S608
        f"{column('outcome')} = {outcome_sql}, {column('lease_until')} = NULL, "
        f"{column('error')} = %s, {column('uncertain')} = %s, "
        f"{column('history')} = {history_sql} "
        f"WHERE {by_id} AND {by_token} AND {column('status')} = %s"
    )
    params = [
        Status.SUCCEEDED,
        adapt.adapt_datetimefield_value(now),
        *outcome_params,
        "",
        "",  # the try's outcome is known: its uncertainty, if any, is over
        *history_params,
        *id_params,
        *token_params,
        Status.RUNNING,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _per_row(store: Store, id_column: str, values: dict[int, Any]) -> tuple[str, list[Any]]:
    """A JSON value per row: one parameter if every row gets the same JSON, else a ``CASE``.

    Values are dumped as the model's JSONField dumps them (``json.dumps``, no encoder), so
    ``None`` is JSON ``null``, as the ORM writes it for a JSON value.
    """
    dumped = {pk: json.dumps(value) for pk, value in values.items()}
    if len(set(dumped.values())) == 1:
        return store.json_value("%s"), [next(iter(dumped.values()))]
    whens = " ".join(["WHEN %s THEN %s"] * len(dumped))
    params = [item for pair in dumped.items() for item in pair]
    return store.json_value(f"CASE {id_column} {whens} END"), params


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
    "even_if_paused": "FALSE",
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
    fields = [Attempt._meta.get_field(name) for name in _PLANNED_COLUMNS]
    columns = [column(name) for name in (*_PLANNED_COLUMNS, *_NEW_ATTEMPT_DEFAULTS)]
    adapt = connection.ops.adapt_datetimefield_value
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
    store_of(using).insert_rows(
        table, fields, columns, values, list(_NEW_ATTEMPT_DEFAULTS.values())
    )
