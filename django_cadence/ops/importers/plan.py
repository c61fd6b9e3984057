"""What an import would do: schedules read from another scheduler, compared with the table.

A source (``celery_beat.py``, ``django_q.py``) turns its schedules into :class:`Found` entries
(fields in the ``CADENCE_SCHEDULES`` vocabulary, plain values only, and a note for each field
it could not map) or :class:`Refused` ones (the reason). Here each entry is validated exactly as
a declaration is (:func:`~django_cadence.ops.declarations.build`), then compared by name with
the ``Schedule`` table: a name already there is never changed, so importing twice adds nothing.
Where the source can compute its own next firings (beat's crontabs), the next ten are checked
against ours and any difference is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from ... import store
from ...models import Schedule
from ...schedule.describe import format_in_zone, zone
from ...schedule.queues import DEFAULT_QUEUE, queue_name_error
from .. import declarations
from ..reconcile import describe, differences, show
from . import block
from .block import escaped


@dataclass(frozen=True)
class Found:
    """A schedule read from the source, in ``CADENCE_SCHEDULES`` fields."""

    name: str
    origin: str  # where it was read, for the diff: "PeriodicTask 'x'", "CELERY_BEAT_SCHEDULE['x']"
    fields: dict[str, Any]
    notes: tuple[str, ...] = ()  # the source's fields that have no equivalent, and why
    paused_reason: str = ""  # set when the source had it disabled
    # The source's own next firings after an instant, where it can say (beat's crontabs).
    firings: Callable[[datetime, int], list[datetime]] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Refused:
    """A schedule left out, because importing it would change what it means."""

    name: str
    origin: str
    reason: str


@dataclass
class Entry:
    """One found schedule against the table: ``create``, ``unchanged`` or ``differs``."""

    found: Found
    action: str
    candidate: Schedule
    differences: list[tuple[str, Any, Any]] = field(default_factory=list)
    upcoming: list[datetime] = field(default_factory=list)  # our next firings
    check: str = ""  # how they compare with the source's own
    declared_in: str = ""  # where code declares this name already, if it does


@dataclass
class ImportPlan:
    source: str
    entries: list[Entry] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    def creates(self) -> list[Entry]:
        return [entry for entry in self.entries if entry.action == "create"]

    def lines(self, *, paused: bool = False) -> list[str]:
        """The diff, one schedule per paragraph, in the order the source listed them."""
        out: list[str] = []
        for entry in self.entries:
            found = entry.found
            name, origin = escaped(found.name), escaped(found.origin)
            if entry.action == "create":
                state = escaped(_state(found, paused))
                out.append(f"+ {name} ({escaped(describe(entry.candidate))}){state}")
                out.append(f"    from {origin}")
                out.extend(f"    {key} = {escaped(show(value))}" for key, value in _shown(found))
                out.extend(_next_lines(entry))
            elif entry.action == "unchanged":
                out.append(f"= {name}: already imported, unchanged")
            else:
                out.append(f"! {name}: a schedule of this name exists and differs; kept:")
                out.extend(
                    f"    {field}: {escaped(show(ours))} here, {escaped(show(theirs))} in {origin}"
                    for field, ours, theirs in entry.differences
                )
            if entry.action != "unchanged":
                out.extend(f"    note: {escaped(note)}" for note in found.notes)
        for refused in self.refused:
            out.append(f"x {escaped(refused.name)}: not imported: {escaped(refused.reason)}")
            out.append(f"    from {escaped(refused.origin)}")
        out.extend(self.workers_hint())
        return out

    def workers_hint(self) -> list[str]:
        """How to start workers for the queues the imported schedules name, if any but
        ``default``: a queue nobody serves would leave its schedules waiting."""
        named = sorted(
            {str(e.found.fields.get("queue", DEFAULT_QUEUE)) for e in self.entries}
            - {DEFAULT_QUEUE}
        )
        if not named:
            return []
        listed = escaped(",".join(named))
        hint = (
            f"Queues named: {listed}. Start a worker for them with run_cadence --queues "
            f"{listed} (a run_cadence without --queues serves every queue)."
        )
        return [hint]

    def summary(self, *, written: bool) -> str:
        count = {a: sum(e.action == a for e in self.entries) for a in ("create", "unchanged")}
        differs = len(self.entries) - count["create"] - count["unchanged"]
        verb = "created" if written else "to create"
        tail = "" if written else " (dry run: nothing written; --write to import)"
        return (
            f"{self.source}: {count['create']} {verb}, {count['unchanged']} already imported, "
            f"{differs} differing (kept), {len(self.refused)} refused{tail}"
        )

    def settings_block(self, *, paused: bool = False) -> str:
        """``CADENCE_SCHEDULES = {...}``: every importable schedule, plain Python to paste.

        A schedule the source had disabled (every one, with ``paused``) is declared
        ``start_paused``; what has no equivalent is a comment above the schedule it concerns.
        """
        return block.render(self, paused_reason=self.paused_reason() if paused else "")

    def paused_reason(self) -> str:
        """The pause reason of what ``--paused`` imports."""
        return f"imported paused from {self.source}: resume it when the old one is off"


def map_queue(value: Any, source: str, fields: dict[str, Any], notes: list[str]) -> None:
    """The source's queue (or cluster) ``value`` as the schedule's ``queue``; a name this
    project cannot use is a note saying why, and the schedule stays in ``default``."""
    if value in (None, ""):
        return
    error = queue_name_error(value)
    if error:
        notes.append(f"{source}={value!r}: not kept as the queue: {error}")
    else:
        fields["queue"] = value


def _state(found: Found, paused: bool) -> str:
    if found.paused_reason:
        return f", paused: {found.paused_reason}"
    return ", paused" if paused else ""


def _shown(found: Found) -> list[tuple[str, Any]]:
    return [(key, value) for key, value in found.fields.items() if key not in ("cron",)]


def _next_lines(entry: Entry) -> list[str]:
    if not entry.upcoming or entry.candidate.kind == "interval":
        return []  # an interval's phase is set when it is created, not before
    tz = zone(entry.candidate.timezone)
    shown = ", ".join(format_in_zone(instant, tz) for instant in entry.upcoming[:3])
    return [f"    next: {shown}"] + ([f"    {entry.check}"] if entry.check else [])


def _compare(entry: Entry, now: datetime) -> None:
    """Our next firings, and the source's own where it can compute them."""
    entry.upcoming = entry.candidate.upcoming(10, after=now)
    if entry.found.firings is None:
        return
    theirs = entry.found.firings(now, len(entry.upcoming))
    tz = zone(entry.candidate.timezone)
    for ours, their in zip(entry.upcoming, theirs, strict=False):
        if ours != their:
            entry.check = (
                f"differs from the source: {format_in_zone(ours, tz)} here, "
                f"{format_in_zone(their, tz)} there (see the DST rules)."
            )
            return
    entry.check = f"the source's own next {len(theirs)} firings are the same."


def build_plan(
    source: str,
    found: list[Found],
    refused: list[Refused],
    using: str | None = None,
    now: datetime | None = None,
) -> ImportPlan:
    """Validate each found schedule and compare it with the row of the same name, if any."""
    now = now or timezone.now()
    using = store.alias_or_refuse(using)
    plan = ImportPlan(source, refused=list(refused))
    declared = {d.name: d.origin for d in declarations.collect()[0]}
    seen: set[str] = set()
    named = Schedule.objects.using(using).filter(name__in=[item.name for item in found])
    rows = {row.name: row for row in named}
    for item in found:
        if item.name in seen:
            plan.refused.append(Refused(item.name, item.origin, "another schedule has this name."))
            continue
        seen.add(item.name)
        try:
            candidate = declarations.build(
                declarations.Declaration(item.name, item.origin, item.fields)
            )
        except declarations.DeclarationError as exc:
            plan.refused.append(Refused(item.name, item.origin, exc.details))
            continue
        row = rows.get(item.name)
        if row is None:
            entry = Entry(item, "create", candidate)
            _compare(entry, now)
        else:
            changed = differences(row, candidate)
            entry = Entry(item, "differs" if changed else "unchanged", candidate, changed)
        entry.declared_in = declared.get(item.name, "")
        plan.entries.append(entry)
    return plan


def write(plan: ImportPlan, *, paused: bool, using: str | None = None) -> list[Schedule]:
    """Create the schedules the plan creates; a name taken meanwhile is left as it is."""
    using = store.alias_or_refuse(using)
    created: list[Schedule] = []
    for entry in plan.creates():
        schedule = entry.candidate
        schedule.code_owned = False  # made by an import: the admin's, until code declares it
        reason = entry.found.paused_reason or (plan.paused_reason() if paused else "")
        if reason:
            schedule.enabled, schedule.pause_reason = False, reason
        with transaction.atomic(using=using):
            if Schedule.objects.using(using).filter(name=schedule.name).exists():
                continue
            schedule.save(using=using)
        created.append(schedule)
    return created
