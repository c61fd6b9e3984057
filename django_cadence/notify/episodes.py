"""Open, count and resolve episodes, exactly once across the fleet (docs/design.md,
"Notifications").

Opening is an insert guarded by the unique constraint on the open notice of an (event,
subject): the writer whose insert lands writes the opening's deliveries in its transaction;
a writer that finds the episode open counts one more sighting instead. Resolving is a
conditional update of an open notice: the writer whose update changed the row writes the
resolution's deliveries. Both run inside the caller's transaction where it has one (the
dead letter, the auto-pause, the overdue mark that the episode reports), so the record and
what it reports commit together.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from .. import store
from ..conf import cadence_settings
from ..executors.log_text import log_value
from ..models import Delivery, Event, Notice, NoticeState, Schedule
from ..models.notice import schedule_subject
from . import enabled, messages, routing

logger = logging.getLogger("django_cadence.notify")

# Set when this process wrote a delivery: its sender sends at once rather than at its next
# poll (``sender``).
WAKE = threading.Event()


def open_or_count(
    event: str,
    subject: str,
    name: str,
    now: datetime,
    *,
    schedule: Schedule | None = None,
    detail: str = "",
    attempt_id: int | None = None,
    count: int = 1,
) -> Notice | None:
    """Open the episode of ``event`` on ``subject``, or count one more sighting of the open
    one. Returns the notice when this call opened it (and wrote its deliveries), else None."""
    if not enabled():
        return None
    with transaction.atomic(using=store.alias()):
        for _ in range(2):  # an episode resolved between the two statements: open anew
            try:
                with transaction.atomic(using=store.alias()):
                    notice = Notice.objects.create(
                        event=event,
                        subject=subject,
                        schedule=schedule,
                        name=name,
                        opened_at=now,
                        last_seen_at=now,
                        detail=detail,
                        attempt_id=attempt_id,
                        count=count,
                    )
            except IntegrityError:
                counted = Notice.objects.open().filter(event=event, subject=subject)
                changes: dict[str, Any] = {"count": F("count") + 1, "last_seen_at": now}
                if detail:
                    changes["detail"] = detail
                if counted.update(**changes):
                    return None
                continue
            _enqueue(notice, NoticeState.OPEN, schedule, now)
            logger.warning(
                "notice opened id=%s event=%s subject=%s", notice.pk, event, log_value(name)
            )
            return notice
    return None


def schedule_event(
    event: str,
    schedule_id: int,
    now: datetime,
    *,
    detail: str = "",
    attempt_id: int | None = None,
    count: int = 1,
) -> Notice | None:
    """Open or count ``event`` on a schedule (read once, for its name and routing)."""
    if not enabled():
        return None
    schedule = Schedule.objects.filter(pk=schedule_id).first()
    if schedule is None:
        return None
    return open_or_count(
        event,
        schedule_subject(schedule_id),
        schedule.name,
        now,
        schedule=schedule,
        detail=detail,
        attempt_id=attempt_id,
        count=count,
    )


def resolve(notice: Notice, now: datetime, why: str) -> bool:
    """Resolve ``notice`` if it is still open; True when this call did (and wrote the
    resolution's deliveries)."""
    with transaction.atomic(using=store.alias()):
        resolved = (
            Notice.objects.open()
            .filter(pk=notice.pk)
            .update(is_open=None, resolved_at=now, resolution=why)
        )
        if not resolved:
            return False
        notice.refresh_from_db()
        _enqueue(notice, NoticeState.RESOLVED, notice.schedule, now)
    logger.info("notice resolved id=%s event=%s why=%s", notice.pk, notice.event, log_value(why))
    return True


def _enqueue(notice: Notice, state: str, schedule: Schedule | None, now: datetime) -> None:
    """One delivery per channel that takes the notice (a resolution goes to the channels that
    were told of the opening); the sender is woken at commit."""
    if state == NoticeState.RESOLVED:
        told = set(
            notice.deliveries.filter(state=NoticeState.OPEN).values_list("channel", flat=True)
        )
        channels = [c for c in cadence_settings.NOTIFY.channels if c.name in told]
    else:
        fleet = notice.event in (Event.NO_WORKER, Event.WORKER_UNHEALTHY, Event.UNSERVED_QUEUE)
        channels = routing.channels_for(notice.event, None if fleet else schedule)
    metadata = schedule.metadata if schedule is not None else None
    body = messages.body(notice, state, metadata=metadata)
    Delivery.objects.bulk_create(
        Delivery(
            notice=notice,
            state=state,
            channel=channel.name,
            body=body,
            created_at=now,
            next_try_at=now,
        )
        for channel in channels
    )
    if channels:
        transaction.on_commit(WAKE.set, using=store.alias())
