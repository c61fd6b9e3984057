"""Sentry Crons: each schedule a monitor, each try a check-in, through sentry-sdk's own API
(``pip install "django-cadence-scheduler[sentry]"``; the project calls ``sentry_sdk.init``).

A try's start sends ``in_progress`` with the monitor's configuration (the schedule's cron
rule or interval, its time zone, the check-in margin, its run-time limit in minutes, and its
``notify_after_failures`` as the failures before Sentry opens an issue), so the monitor is
created and kept in step by the check-ins themselves; its end sends ``ok`` or ``error`` for
the same check-in. Sentry itself alerts on a missed check-in, even when the whole fleet is
down. sentry-sdk queues each envelope for its own background thread: a check-in never waits
on the network. A schedule is a monitor unless its ``notify`` leaves out every Sentry channel.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from datetime import timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.utils.text import slugify

from ..conf import Channel, cadence_settings
from ..models import Kind, Schedule
from ..models.options import resolved_options
from . import routing

logger = logging.getLogger("django_cadence.notify")

SLUG_CHARS = 50
CONFIG_TTL = 60.0  # seconds a schedule's monitor configuration is reused before it is read again
MAX_OPEN = 10_000  # check-ins awaiting their end (a lost try never ends: the oldest go first)

_lock = threading.Lock()
_open: OrderedDict[tuple[Any, Any], tuple[str, str, float]] = OrderedDict()
_configs: dict[str, tuple[float, dict[str, Any] | None, str]] = {}


def _sdk() -> Any:
    try:
        from sentry_sdk import crons
    except ImportError:
        raise ImproperlyConfigured(
            "CADENCE_NOTIFY has a sentry channel but sentry-sdk is not installed: "
            'pip install "django-cadence-scheduler[sentry]".'
        ) from None
    return crons


def channels() -> list[Channel]:
    return [c for c in cadence_settings.NOTIFY.channels if c.type == "sentry"]


def monitor_slug(name: str) -> str:
    """The monitor's slug: the schedule's name as a slug, at most 50 characters."""
    return slugify(name)[:SLUG_CHARS].strip("-") or "schedule"


def monitor_config(schedule: Schedule, channel: Channel) -> dict[str, Any] | None:
    """The monitor of ``schedule``: None for a one-shot, which has no rule to miss."""
    options = resolved_options(schedule)
    config: dict[str, Any] = {
        "timezone": schedule.timezone,
        "checkin_margin": channel.margin,
        "max_runtime": max(1, -(-int(options["max_runtime"].total_seconds()) // 60)),
        "failure_issue_threshold": schedule.notify_after_failures
        or cadence_settings.NOTIFY.failures,
    }
    if schedule.kind == Kind.CRON:
        config["schedule"] = {"type": "crontab", "value": schedule.cron}
        return config
    if schedule.kind == Kind.INTERVAL and schedule.interval is not None:
        config["schedule"] = _interval(schedule.interval)
        return config
    return None


def _interval(every: timedelta) -> dict[str, Any]:
    """Sentry counts intervals in whole minutes, hours, days or weeks: the largest unit that
    divides the interval, else whole minutes rounded up (at least one)."""
    seconds = int(every.total_seconds())
    for unit, size in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            return {"type": "interval", "value": seconds // size, "unit": unit}
    return {"type": "interval", "value": max(1, -(-seconds // 60)), "unit": "minute"}


def _monitor(name: str) -> tuple[dict[str, Any] | None, str]:
    """(config, slug) of the schedule called ``name``, or (None, "") when no Sentry channel
    takes it; read from the database at most once a ``CONFIG_TTL``."""
    cached = _configs.get(name)
    if cached is not None and time.monotonic() - cached[0] < CONFIG_TTL:
        return cached[1], cached[2]
    config, slug = None, ""
    schedule = Schedule.objects.filter(name=name).first()
    taker = next(
        (
            c
            for c in channels()
            if schedule and routing.routed(c, schedule.notify, schedule.metadata)
        ),
        None,
    )
    if schedule is not None and taker is not None:
        config, slug = monitor_config(schedule, taker), monitor_slug(name)
    _configs[name] = (time.monotonic(), config, slug)
    return config, slug


def started(sender: Any, *, attempt_id: Any, schedule: str, try_number: Any, **kw: Any) -> None:
    """``attempt_started``: an ``in_progress`` check-in, with the monitor's configuration."""
    if not channels():
        return
    config, slug = _monitor(schedule)
    if config is None:
        return
    check_in_id = _sdk().capture_checkin(
        monitor_slug=slug, status="in_progress", monitor_config=config
    )
    with _lock:
        _open[(attempt_id, try_number)] = (check_in_id, slug, time.monotonic())
        while len(_open) > MAX_OPEN:
            _open.popitem(last=False)


def _finished(attempt_id: Any, try_number: Any, status: str) -> None:
    with _lock:
        opened = _open.pop((attempt_id, try_number), None)
    if opened is None:
        return
    check_in_id, slug, began = opened
    _sdk().capture_checkin(
        monitor_slug=slug,
        check_in_id=check_in_id,
        status=status,
        duration=time.monotonic() - began,
    )


def succeeded(sender: Any, *, attempt_id: Any, try_number: Any, **kw: Any) -> None:
    if channels():
        _finished(attempt_id, try_number, "ok")


def failed(sender: Any, *, attempt_id: Any, try_number: Any, **kw: Any) -> None:
    if channels():
        _finished(attempt_id, try_number, "error")


def test_message(body: dict[str, Any]) -> str:
    """The admin's test: one message event through sentry-sdk (check-ins need a monitor)."""
    import sentry_sdk

    event_id = sentry_sdk.capture_message(body["summary"], level="info")
    return f"event {event_id}" if event_id else "sentry-sdk dropped it (is it initialised?)"


def forget() -> None:
    """Drop what is cached (tests; a changed setting)."""
    with _lock:
        _open.clear()
    _configs.clear()
