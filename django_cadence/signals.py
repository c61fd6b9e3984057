"""Signals sent on every state change; the default receivers (``signal_handlers``) log them.

Every signal is sent with ``sender=Attempt`` (``schedule_*``: ``sender=Schedule``) after
the change is committed, with keyword arguments only:

- ``attempt_started``: ``attempt_id, schedule, occurrence_at, try_number, worker``
- ``attempt_succeeded``: ``attempt_id, schedule, occurrence_at, try_number, worker``
- ``attempt_failed``: the same plus ``error`` and ``retry_at`` (``None`` when dead-lettered)
- ``attempt_dead_lettered``: ``attempt_id, schedule, occurrence_at, try_number, reason``
- ``occurrence_skipped``: ``schedule, occurrence_at, reason``
- ``occurrence_missed``: ``schedule, first, last, count``
- ``schedule_paused``: ``schedule, reason``
- ``schedule_overdue`` (``sender=Schedule``): ``schedule, last_success_at, overdue_since``;
  once per overdue spell, by the engine within ``engine.overdue.OVERDUE_PROBE`` of its start

``schedule`` is the schedule's name. Receivers run in the engine's threads: keep them quick,
and never raise (an exception in a receiver is logged by the engine, not swallowed).
"""

from django.dispatch import Signal

attempt_started = Signal()
attempt_succeeded = Signal()
attempt_failed = Signal()
attempt_dead_lettered = Signal()
occurrence_skipped = Signal()
occurrence_missed = Signal()
schedule_paused = Signal()
schedule_overdue = Signal()
