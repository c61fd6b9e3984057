"""Which channels take a notice: the event each channel takes, the schedule's ``notify``
field (``off``, or the channels it names), else each channel's ``metadata`` filter.

A fleet event (no live worker, a worker that exited unhealthy) has no schedule: it goes to
every channel that takes the event and filters on no metadata.
"""

from __future__ import annotations

from typing import Any

from ..conf import Channel, cadence_settings
from ..models.validation import NOTIFY_OFF, notify_channels


def channels_for(event: str, schedule: Any | None) -> list[Channel]:
    """The episode channels (not Sentry's, which checks in per try) that take ``event`` of
    ``schedule`` (None for a fleet event)."""
    takers = [
        c for c in cadence_settings.NOTIFY.channels if c.type != "sentry" and event in c.events
    ]
    if schedule is None:
        return [c for c in takers if not c.metadata]
    return [c for c in takers if routed(c, schedule.notify, schedule.metadata)]


def routed(channel: Channel, notify: str, metadata: Any) -> bool:
    """Whether a schedule with these ``notify`` and ``metadata`` goes to ``channel``: named
    channels override the metadata filters; ``off`` takes it off every channel."""
    if notify.strip().lower() == NOTIFY_OFF:
        return False
    named = notify_channels(notify)
    if named:
        return channel.name in named
    labels = metadata if isinstance(metadata, dict) else {}
    return all(str(labels.get(label)) in wanted for label, wanted in channel.metadata)
