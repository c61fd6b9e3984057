"""What a tick catches up, said in the log: after a stop, each schedule behind says how many
occurrences run now and why (docs/reference/semantics.md, "Misfires").

Every occurrence within the misfire grace is on time, so after two minutes without an
engine a 15 s schedule with the default ``fire_once`` runs four on-time occurrences and the
latest of the older ones, back to back. That is the rule, and it surprises whoever reads
"fire once" as one run: the planner notes each schedule that runs more than one past
occurrence in a tick, or records some missed, and logs at most :data:`LINES` of them per
batch, the rest counted in one line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..executors.log_text import log_value
from ..models import Schedule, Status
from ..schedule import policies

logger = logging.getLogger("django_cadence.planner")

LINES = 10  # schedules named per planning batch; the rest are counted in one line


@dataclass(frozen=True)
class CatchUp:
    """One schedule's catch-up in one tick."""

    schedule: str
    misfire: str
    overlap: str
    grace: timedelta
    on_time: int  # occurrences already due and within the grace: they run
    late: int  # occurrences beyond the grace that run all the same (fire_once, fire_all)
    missed: int  # recorded missed
    skipped: int  # not run: the overlap policy
    since: datetime  # the oldest occurrence caught up

    @property
    def run(self) -> int:
        return self.on_time + self.late - self.skipped

    def line(self) -> str:
        parts = [self._on_time()]
        if self.misfire == "fire_once" and self.late:
            older = self.late + self.missed
            missed = f" and records {self.missed} missed" if self.missed else ""
            parts.append(f"misfire=fire_once adds the latest of the {older} older one(s){missed}")
        elif self.misfire == "fire_all" and self.late:
            parts.append(f"misfire=fire_all adds the {self.late} older one(s)")
        elif self.missed:
            parts.append(f"misfire={self.misfire} records the {self.missed} older one(s) missed")
        if self.skipped:
            parts.append(f"overlap={self.overlap} skips {self.skipped}")
        if self.run > 1:
            parts.append(
                f"the {self.run} run one after another (overlap={self.overlap})"
                if policies.is_serial(self.overlap)
                else f"the {self.run} may run at once (overlap=allow)"
            )
        return (
            f"catching up schedule={log_value(self.schedule)} run={self.run} "
            f"missed={self.missed} skipped={self.skipped} since={self.since.isoformat()}: "
            + "; ".join(parts)
        )

    def _on_time(self) -> str:
        grace = f"misfire_grace ({self.grace.total_seconds():g} s)"
        if not self.on_time:
            return f"no occurrence is within its {grace}"
        return f"{self.on_time} occurrence(s) within its {grace} are on time"


def note(
    schedule: Schedule,
    plan: policies.MisfirePlan,
    statuses: tuple[str, ...],
    now: datetime,
    grace: timedelta,
) -> CatchUp | None:
    """The catch-up of one schedule's plan, or None when it is an ordinary tick (at most one
    occurrence already due, none missed)."""
    due = [at for at in plan.fire if at <= now]
    if len(due) < 2 and not plan.missed:
        return None
    on_time = sum(now - at <= grace for at in due)
    return CatchUp(
        schedule=schedule.name,
        misfire=schedule.misfire,
        overlap=schedule.overlap,
        grace=grace,
        on_time=on_time,
        late=len(due) - on_time,
        missed=len(plan.missed),
        skipped=sum(status == Status.SKIPPED for status in statuses[: len(due)]),
        since=min([*due[:1], *plan.missed[:1]]),
    )


def log(notes: list[CatchUp]) -> None:
    """One line per schedule for the first :data:`LINES`, then one for the rest."""
    for catch_up in notes[:LINES]:
        logger.info("%s", catch_up.line())
    rest = notes[LINES:]
    if rest:
        logger.info(
            "catching up %s more schedule(s) run=%s missed=%s skipped=%s: not listed",
            len(rest),
            sum(c.run for c in rest),
            sum(c.missed for c in rest),
            sum(c.skipped for c in rest),
        )
