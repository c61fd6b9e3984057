"""Schedules as code: make the ``Schedule`` table match what code declares.

``reconcile()`` runs at engine start and from ``manage.py cadence_sync``. Declared schedules
(:mod:`django_cadence.ops.declarations`) are created, or updated in the fields code owns (spec,
executor, payload, policies); the operator's pause is kept. Code-owned schedules no longer
declared are disabled, never deleted (their attempts are history). A row with a declared
name that was made in the admin is adopted. The result is a diff, one line per change.

Many engines may start at once. Each reconciles inside one transaction holding the
``reconcile`` :class:`~django_cadence.models.Lock` row (an ``UPDATE`` of it: a row lock on
PostgreSQL and MariaDB, the write lock on SQLite), so they take turns: the first applies the
changes, the others find nothing left to do. No vendor-specific advisory lock is needed, and
the lock is released by the database whatever happens to the process. The unique schedule
name is the backstop: a redeploy can never duplicate a schedule.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from .. import signals, store
from ..clock import Clock
from ..conf import cadence_settings
from ..exceptions import CadenceError
from ..executors.log_text import log_value
from ..executors.redaction import redact
from ..models import Calendar, Lock, Schedule
from . import calendar_sync, declarations
from .declarations import CODE_OWNED_FIELDS, DeclarationError

logger = logging.getLogger("django_cadence.reconcile")

LOCK_NAME = "reconcile"
REMOVED_REASON = "removed from code: no longer declared in CADENCE_SCHEDULES or @job(schedule=...)"


class InvalidDeclarations(CadenceError, ValueError):
    """Some schedules declared in code are invalid; nothing was changed."""

    def __init__(self, errors: list[DeclarationError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(error) for error in errors))


# Each action's verb, done and to be done (a dry run says what it would do).
VERBS = {
    "create": ("created", "would create"),
    "update": ("updated", "would update"),
    "adopt": ("adopted", "would adopt"),
    "enable": ("enabled", "would enable"),
    "hold": ("kept paused", "would keep paused"),
    "disable": ("disabled", "would disable"),
}


@dataclass(frozen=True)
class Change:
    action: str  # "create" | "update" | "adopt" | "enable" | "hold" | "disable"
    name: str
    field: str = ""
    old: Any = None
    new: Any = None

    def line(self, *, dry_run: bool = False) -> str:
        verb = VERBS[self.action][dry_run]
        if self.action == "create":
            return f"+ {verb} {self.name} ({self.new})"
        if self.action == "update":
            return f"~ {verb} {self.name} {self.field}: {show(self.old)} -> {show(self.new)}"
        if self.action == "adopt":
            return f"~ {verb} {self.name}: made outside code, now owned by code"
        if self.action == "enable":
            return f"~ {verb} {self.name}: declared in code again"
        if self.action == "hold":
            return f"~ {verb} {self.name}: declared in code again with start_paused"
        return f"- {verb} {self.name}: no longer declared in code{self.new or ''}"


@dataclass
class ReconcileResult:
    changes: list[Change] = field(default_factory=list)
    errors: list[DeclarationError] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    dry_run: bool = False

    def lines(self) -> list[str]:
        return [change.line(dry_run=self.dry_run) for change in self.changes]

    def summary(self) -> str:
        def count(*actions: str) -> int:
            return len({c.name for c in self.changes if c.action in actions})

        verb = "would be " if self.dry_run else ""
        return (
            f"{count('create')} {verb}created, "
            f"{count('update', 'adopt', 'enable', 'hold')} {verb}updated, "
            f"{count('disable')} {verb}disabled, {len(self.unchanged)} unchanged"
        )


def reconcile(
    now: datetime | None = None,
    *,
    dry_run: bool = False,
    strict: bool = True,
    holder: str = "",
    using: str | None = None,
) -> ReconcileResult:
    """Apply the declared schedules; with ``dry_run``, only say what would change.

    ``strict`` (``cadence_sync``): any invalid declaration raises :class:`InvalidDeclarations`
    before anything is written. Otherwise (engine start) invalid ones are reported in the
    result and left as they are (not disabled), and the valid ones are applied.
    """
    now = now or timezone.now()
    using = store.alias_or_refuse(using)
    found, errors = declarations.collect()
    declared = {d.name for d in found} | {e.name for e in errors}
    candidates: dict[str, Schedule] = {}
    for declaration in found:
        try:
            candidates[declaration.name] = declarations.build(declaration)
        except DeclarationError as exc:
            errors.append(exc)
    calendar_errors = _calendar_errors()
    errors.extend(calendar_errors)
    if errors and strict:
        raise InvalidDeclarations(errors)
    result = ReconcileResult(errors=errors, dry_run=dry_run)
    schedules = Schedule.objects.using(using)
    if not declared and not cadence_settings.CALENDARS and not _owned_by_code(using):
        return result  # schedules as code are not in use: no lock, no writes
    calendars_in_code = bool(cadence_settings.CALENDARS) or (
        Calendar.objects.using(using).filter(code_owned=True).exists()
    )
    sync_calendars = calendars_in_code and not calendar_errors
    if dry_run:
        rows = _rows(schedules, declared)
        result.changes, result.unchanged = plan(candidates, rows, declared)
        if sync_calendars:
            result.changes += _calendar_changes(calendar_sync.plan(using))
        return result
    _ensure_lock_row(LOCK_NAME, using)
    with transaction.atomic(using=using):
        _acquire(LOCK_NAME, holder, now, using)
        calendar_changes = calendar_sync.apply(using) if sync_calendars else []
        rows = _rows(schedules.select_for_update(), declared)
        result.changes, result.unchanged = plan(candidates, rows, declared)
        _apply(result, candidates, rows, now, using)
        result.changes += _calendar_changes(calendar_changes)
    for change in result.changes:
        logger.info("schedule reconciled %s", change.line())
    return result


def reconcile_on_start(clock: Clock, *, holder: str = "", using: str | None = None) -> None:
    """The engine's start-up reconcile: logs problems and never stops the engine."""
    try:
        if not cadence_settings.RECONCILE_ON_START:
            return
        result = reconcile(clock.now(), strict=False, holder=holder, using=using)
    except Exception:  # a bad setting or a database hiccup must not stop the engine
        logger.exception("schedules from code not reconciled; the engine goes on without it")
        return
    for error in result.errors:
        logger.error("schedule declaration invalid, left as it is: %s", log_value(error, 2000))
    if result.changes:
        logger.info("schedules from code reconciled: %s", result.summary())


def _owned_by_code(using: str) -> bool:
    """Whether any schedule or calendar is code-owned, in one query."""
    schedules = Schedule.objects.using(using).filter(code_owned=True).values("pk")
    calendars = Calendar.objects.using(using).filter(code_owned=True).values("pk")
    return schedules.union(calendars).exists()


def _calendar_errors() -> list[DeclarationError]:
    """Declared calendars with a bad zone or rule, or an unknown or circular base."""
    return [
        DeclarationError(name, f"CADENCE_CALENDARS[{name!r}]", {field: [message]})
        for name, field, message in calendar_sync.check_declared()
    ]


def _calendar_changes(changes: list[tuple[str, str, str]]) -> list[Change]:
    """A calendar sync's changes as lines of the same diff."""
    actions = {"create": "create", "update": "update", "adopt": "adopt", "release": "disable"}
    return [
        Change(
            actions[action],
            f"calendar {name}",
            field,
            "-" if action == "update" else None,
            {
                "create": "CADENCE_CALENDARS",
                "update": "as declared",
                "release": " (kept: now the operator's)",
            }.get(action),
        )
        for action, name, field in changes
    ]


def _rows(queryset: QuerySet[Schedule, Schedule], declared: set[str]) -> dict[str, Schedule]:
    return {s.name: s for s in queryset.filter(Q(name__in=declared) | Q(code_owned=True))}


def _ensure_lock_row(name: str, using: str) -> None:
    """Create the lock's row once, outside the locking transaction (racing creators agree)."""
    Lock.objects.using(using).get_or_create(name=name)


def _acquire(name: str, holder: str, now: datetime, using: str) -> None:
    """Take the named lock for the rest of the current transaction (waits for a holder)."""
    locks = Lock.objects.using(using).filter(name=name)
    if not locks.update(holder=holder[:200], acquired_at=now):
        # The row vanished since _ensure_lock_row (a test flush): make it inside the lock.
        Lock.objects.using(using).create(name=name, holder=holder[:200], acquired_at=now)


def plan(
    candidates: dict[str, Schedule], rows: dict[str, Schedule], declared: set[str]
) -> tuple[list[Change], list[str]]:
    """The changes that make ``rows`` match ``candidates``; pure, for dry runs and tests."""
    changes: list[Change] = []
    unchanged: list[str] = []
    for name in sorted(candidates):
        candidate, row = candidates[name], rows.get(name)
        if row is None:
            paused = "" if candidate.enabled else f"; paused: {candidate.pause_reason}"
            changes.append(Change("create", name, new=f"{describe(candidate)}{paused}"))
            continue
        found = [
            Change("update", name, field, old, new)
            for field, old, new in differences(row, candidate)
        ]
        if not row.code_owned:
            found.insert(0, Change("adopt", name))
        if row.removed_from_code_at is not None and not row.enabled:
            found.append(Change("enable" if candidate.enabled else "hold", name))
        changes.extend(found)
        if not found:
            unchanged.append(name)
    for name in sorted(set(rows) - declared):
        row = rows[name]
        if row.code_owned:
            note = "" if row.enabled else " (it was already paused)"
            changes.append(Change("disable", name, new=note))
    return changes, unchanged


def _apply(
    result: ReconcileResult,
    candidates: dict[str, Schedule],
    rows: dict[str, Schedule],
    now: datetime,
    using: str,
) -> None:
    by_name: dict[str, list[Change]] = {}
    for change in result.changes:
        by_name.setdefault(change.name, []).append(change)
    for name, changes in by_name.items():
        action = changes[0].action
        if action == "create":
            _create(candidates[name], now, using)
        elif action == "disable":
            _disable(rows[name], now, using)
        else:
            _update(rows[name], candidates[name], changes, using)


def _create(candidate: Schedule, now: datetime, using: str) -> None:
    candidate.created_at = now
    candidate.code_owned = True
    with transaction.atomic(using=using):
        candidate.save(using=using)


def _update(row: Schedule, candidate: Schedule, changes: list[Change], using: str) -> None:
    fields = {"code_owned", "updated_at"}
    for change in changes:
        if change.action == "update":
            setattr(row, change.field, getattr(candidate, change.field))
            fields.add(change.field)
        elif change.action == "enable":
            row.enabled, row.pause_reason = True, ""
            fields |= {"enabled", "pause_reason"}
        elif change.action == "hold":  # back in code, declared start_paused: paused for it
            row.pause_reason = candidate.pause_reason
            fields.add("pause_reason")
    row.code_owned = True
    if row.removed_from_code_at is not None:
        row.removed_from_code_at = None
        fields.add("removed_from_code_at")
    row.save(using=using, update_fields=sorted(fields))


def _disable(row: Schedule, now: datetime, using: str) -> None:
    """No longer in code: disabled and handed to the operator (editable, deletable)."""
    fields = ["code_owned", "updated_at"]
    if row.enabled:
        # Marked, so the schedule comes back enabled if code declares it again; a schedule
        # the operator had paused stays paused either way.
        row.enabled, row.pause_reason, row.removed_from_code_at = False, REMOVED_REASON, now
        fields += ["enabled", "pause_reason", "removed_from_code_at"]
    row.code_owned = False
    row.save(using=using, update_fields=fields)
    if "enabled" in fields:
        name = row.name
        transaction.on_commit(
            lambda: signals.send(
                signals.schedule_paused, Schedule, schedule=name, reason=REMOVED_REASON
            ),
            using=using,
        )


def differences(row: Schedule, candidate: Schedule) -> list[tuple[str, Any, Any]]:
    """(field, stored, declared) for each code-owned field where ``row`` and ``candidate``
    differ: what a deploy would change, and what an import would leave alone."""
    found = []
    for name in CODE_OWNED_FIELDS:
        old, new = _plain(row, name), _plain(candidate, name)
        if not _same(old, new):
            found.append((name, old, new))
    return found


def _plain(schedule: Schedule, field: str) -> Any:
    """A field's value without choices enums, so ``Misfire.FIRE_ONCE`` equals "fire_once"."""
    value = getattr(schedule, field)
    return value.value if isinstance(value, Enum) else value


def _same(old: Any, new: Any) -> bool:
    if isinstance(old, datetime) and isinstance(new, datetime):
        return old == new  # instants: the zone they are written in does not matter
    return (type(old) is type(new) and old == new) or (old in (None, "") and new in (None, ""))


def describe(schedule: Schedule) -> str:
    spec = {
        "cron": f"cron {schedule.cron!r}",
        "interval": f"every {show(schedule.interval)}",
        "once": f"once at {show(schedule.run_at)}",
    }.get(schedule.kind, schedule.kind)
    return f"{spec}, {schedule.executor}"


def show(value: Any) -> str:
    """A value for the diff: secrets in payloads redacted, instants in ISO 8601."""
    if value is None or value == "":
        return "-"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}s"
    if isinstance(value, dict | list):
        return json.dumps(redact(value), sort_keys=True, default=str)
    return repr(value)
