"""The engine's part in overdue schedules: send ``schedule_overdue`` once per overdue spell.

Every ``OVERDUE_PROBE`` the engine reads which schedules are overdue (:mod:`..models.overdue`)
and, for each, marks the spell as signalled in one conditional update: the worker whose
update changed the row sends the signal, so a fleet sends it once. A spell ends with the
schedule's next success, which moves its deadline: the next spell is signalled anew.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from .. import signals
from ..models import Schedule
from ..models.overdue import overdue
from .tuning import OVERDUE_PROBE


class OverdueWatch:
    def __init__(self) -> None:
        self.next_probe: datetime | None = None

    def probe(self, now: datetime) -> int:
        """Signal the schedules newly overdue as of ``now``; how many were signalled."""
        if self.next_probe and now < self.next_probe:
            return 0
        self.next_probe = now + OVERDUE_PROBE
        sent = 0
        for spell in overdue(now):
            if spell.signalled or spell.overdue_at is None:
                continue
            unmarked = Q(overdue_signalled_at__isnull=True) | ~Q(
                overdue_signalled_at=spell.overdue_at
            )
            marked = (
                Schedule.objects.filter(pk=spell.schedule_id)
                .filter(unmarked)
                .update(overdue_signalled_at=spell.overdue_at)
            )
            if marked:
                sent += 1
                signals.send(
                    signals.schedule_overdue,
                    Schedule,
                    schedule=spell.name,
                    last_success_at=spell.last_success_at,
                    overdue_since=spell.overdue_at,
                )
        return sent
