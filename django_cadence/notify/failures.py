"""Failed tries in a row: what opens a ``failing`` episode before any dead letter.

A failed try is retried or dead-lettered; a retried one that makes the schedule's failed
tries in a row reach its ``notify_after_failures`` (else ``CADENCE_NOTIFY["failures"]``)
opens the episode, unless the schedule already has an open dead-letter episode, which says
more. A dead letter opens its own episode (``dead_letter``) and never also ``failing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..conf import cadence_settings
from ..models import Attempt, Event, Notice, Schedule, Status
from ..models.notice import schedule_subject
from . import enabled, episodes, messages


def failed_in_history(history: Sequence[Any]) -> int:
    """Failed tries at the end of one attempt's history, back to its last success."""
    count = 0
    for entry in reversed(history):
        result = entry.get("result") if isinstance(entry, dict) else None
        if result == "succeeded":
            break
        if result == "failed":
            count += 1
    return count


def in_a_row(schedule_id: int, attempt_id: int, history: Sequence[Any], threshold: int) -> int:
    """The schedule's failed tries in a row, ending with this attempt's ``history``; counted
    back through its earlier finished attempts until a success, or ``threshold``."""
    count = failed_in_history(history)
    if count >= threshold:
        return count
    earlier = (
        Attempt.objects.filter(
            schedule_id=schedule_id, status__in=(Status.SUCCEEDED, Status.DEAD_LETTER)
        )
        .exclude(pk=attempt_id)
        .order_by("-occurrence_at", "-trigger")
        .values_list("status", "history")[:threshold]
    )
    for status, entries in earlier:
        count += failed_in_history(entries or [])
        if status == Status.SUCCEEDED or count >= threshold:
            break
    return count


def try_failed(
    schedule_id: int,
    attempt_id: int,
    history: Sequence[Any],
    error: str,
    now: datetime,
    *,
    dead_lettered: bool,
) -> None:
    """Open or count the episode a failed try belongs to (inside the transaction that
    recorded it)."""
    if not enabled():
        return
    detail = messages.detail(error)
    if dead_lettered:
        episodes.schedule_event(
            Event.DEAD_LETTER, schedule_id, now, detail=detail, attempt_id=attempt_id
        )
        return
    subject = schedule_subject(schedule_id)
    open_events = set(Notice.objects.open().filter(subject=subject).values_list("event", flat=True))
    if Event.DEAD_LETTER in open_events:
        return
    if Event.FAILING in open_events:  # counted without reading the history again
        episodes.open_or_count(Event.FAILING, subject, "", now, detail=detail)
        return
    own = Schedule.objects.filter(pk=schedule_id).values_list("notify_after_failures", flat=True)
    threshold = own.first() or cadence_settings.NOTIFY.failures
    count = in_a_row(schedule_id, attempt_id, history, threshold)
    if count >= threshold:
        episodes.schedule_event(
            Event.FAILING, schedule_id, now, detail=detail, attempt_id=attempt_id, count=count
        )
