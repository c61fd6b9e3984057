"""The engine's part in overdue schedules: send ``schedule_overdue`` once per overdue spell.

Every ``OVERDUE_PROBE`` the engine reads which schedules are overdue (:mod:`..models.overdue`)
at a quiet moment (``OVERDUE_QUIET``: no try of its own running or about to start) and, for
each, marks the spell as signalled in one conditional update: the worker whose update
changed the row sends the signal, so a fleet sends it once. A spell ends with the
schedule's next success, which moves its deadline: the next spell is signalled anew.
"""

from __future__ import annotations

import time
from datetime import datetime

from django.db.models import Q

from .. import signals
from ..models import Schedule
from ..models.overdue import overdue
from .tuning import OVERDUE_PROBE, OVERDUE_QUIET


class OverdueWatch:
    def __init__(self) -> None:
        self.next_probe: datetime | None = None
        self.took = 0.0  # seconds the last probe took

    def probe(self, now: datetime, idle_until: datetime | None = None) -> int:
        """Signal the schedules newly overdue as of ``now``; how many were signalled.

        ``idle_until``: when this worker next has a try to run (None: none held). A probe
        that would take the interpreter from tries about to start waits for a quiet tick,
        for one more period at most.
        """
        if self.next_probe and now < self.next_probe:
            return 0
        late = self.next_probe is not None and now >= self.next_probe + OVERDUE_PROBE
        if self.next_probe and not late and not self._quiet(now, idle_until):
            return 0
        self.next_probe = now + OVERDUE_PROBE
        started = time.monotonic()
        try:
            return self._signal_newly_overdue(now)
        finally:
            self.took = time.monotonic() - started

    def _quiet(self, now: datetime, idle_until: datetime | None) -> bool:
        """No try due or starting within twice the last probe's duration."""
        if idle_until is None:
            return True
        return (idle_until - now).total_seconds() > max(OVERDUE_QUIET, 2 * self.took)

    def _signal_newly_overdue(self, now: datetime) -> int:
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
