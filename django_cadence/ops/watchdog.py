"""The watchdog: what no worker can say, because none is alive.

``cadence_notify`` (from cron, a systemd timer or a Kubernetes CronJob, beside the workers)
opens the ``no_worker`` episode when no worker has shown a heartbeat while work is due (the
health check ``no_worker``), and an ``unserved_queue`` episode per queue where due work waits
that no live worker serves (the health check ``unserved_queue``), resolves the episodes that
cleared, and sends what waits in the outbox, since no worker's notifier may be there to send
it. Once a worker is live again (or one serving the queue), its notifier resolves the episode.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..models import Event
from ..notify import clearing, episodes, outbox
from .health import fleet_reasons

FLEET = "fleet"


def watch(clock: Callable[[], datetime], sender: str) -> list[outbox.Sent]:
    """One pass; returns what it sent."""
    now = clock()
    for reason in fleet_reasons(now):
        if reason.check == "no_worker":
            episodes.open_or_count(Event.NO_WORKER, FLEET, FLEET, now, detail=reason.message)
        for queue in reason.queues:  # unserved_queue: one episode per queue
            episodes.open_or_count(
                Event.UNSERVED_QUEUE, f"queue:{queue}", queue, now, detail=reason.message
            )
    clearing.resolve_cleared(now)
    return outbox.deliver_due(clock, sender)
