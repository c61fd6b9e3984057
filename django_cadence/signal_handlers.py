"""Receivers wired in ``AppConfig.ready()``: changes to schedules wake listening engines."""

from __future__ import annotations

from .wakeup import notify_change


def schedule_saved(sender, instance, using, **kwargs) -> None:
    notify_change(using)
