"""The engine's part in overdue schedules: send ``schedule_overdue`` once per overdue spell.

Every ``OVERDUE_PROBE`` the engine reads which schedules are overdue (:mod:`..models.overdue`)
and, for each, marks the spell as signalled in one conditional update: the worker whose
update changed the row sends the signal, so a fleet sends it once. A spell ends with the
schedule's next success, which moves its deadline: the next spell is signalled anew.

The reading covers every enabled schedule (a query of a third of a second with 100,000 of
them, longer on a busy server), so it runs on a thread of its own, with its own connection,
and the engine goes on planning and claiming meanwhile; and it judges each active schedule
in Python, so it waits for a quiet moment (``OVERDUE_QUIET``: no try of this worker running
or about to start). An inline engine (the tests') probes within its tick.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime

from django.db import connections
from django.db.models import Q

from .. import notify, signals, store
from ..executors.log_text import log_value
from ..models import Event, Schedule
from ..models.overdue import Silence, overdue
from ..notify import episodes
from .tuning import CLOSE_WAIT, OVERDUE_PROBE, OVERDUE_QUIET

logger = logging.getLogger("django_cadence.engine")


class OverdueWatch:
    def __init__(self, *, inline: bool = False) -> None:
        self.inline = inline  # probe within the tick, not on a thread of its own
        self.next_probe: datetime | None = None
        self.took = 0.0  # seconds the last probe took
        self._thread: threading.Thread | None = None

    def probe(self, now: datetime, idle_until: datetime | None = None) -> None:
        """Signal the schedules newly overdue as of ``now``, if a probe is due.

        ``idle_until``: when this worker next has a try to run (None: none held). A probe
        that would take the interpreter from tries about to start waits for a quiet tick,
        for one more period at most; one that is still reading is not started again.
        """
        if self.next_probe and now < self.next_probe:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        late = self.next_probe is not None and now >= self.next_probe + OVERDUE_PROBE
        if self.next_probe and not late and not self._quiet(now, idle_until):
            return
        self.next_probe = now + OVERDUE_PROBE
        if self.inline:
            self._timed_probe(now)
            return
        self._thread = threading.Thread(
            target=self._probe_in_thread, args=(now,), name="cadence-overdue", daemon=True
        )
        self._thread.start()

    def close(self, timeout: float = CLOSE_WAIT) -> None:
        """Wait (up to ``timeout``) for a probe under way."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _probe_in_thread(self, now: datetime) -> None:
        try:
            store.of().outside_pool()  # the engine's own: it never waits on the jobs' pool
            self._timed_probe(now)
        except Exception as exc:  # logged with its traceback; the next period probes again
            logger.warning(
                "overdue probe failed: %s; the next one is in %s s",
                log_value(exc),
                int(OVERDUE_PROBE.total_seconds()),
                exc_info=True,
            )
        finally:
            connections.close_all()  # this thread's: it ends here

    def _timed_probe(self, now: datetime) -> int:
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
            with notify.atomic():  # the spell's mark and its episode commit together
                marked = (
                    Schedule.objects.filter(pk=spell.schedule_id)
                    .filter(unmarked)
                    .update(overdue_signalled_at=spell.overdue_at)
                )
                if marked:
                    episodes.schedule_event(
                        Event.OVERDUE, spell.schedule_id, now, detail=_overdue_detail(spell)
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


def _overdue_detail(spell: Silence) -> str:
    last = spell.last_success_at.isoformat() if spell.last_success_at else "never"
    due = spell.overdue_at.isoformat() if spell.overdue_at else "-"
    return f"last success: {last}; overdue since {due}"
