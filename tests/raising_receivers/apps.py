from __future__ import annotations

from typing import Any

from django.apps import AppConfig

SIGNALS = (
    "attempt_started",
    "attempt_succeeded",
    "attempt_failed",
    "attempt_dead_lettered",
    "schedule_paused",
)


class NotifierTimedOut(Exception):
    pass


def notify(sender: Any, signal: Any = None, **kwargs: Any) -> None:
    """A notifier that times out every time, its message carrying a token and a newline."""
    raise NotifierTimedOut("slack timed out\nwebhook token=xoxb-hostile-123")


class RaisingReceiversConfig(AppConfig):
    name = "tests.raising_receivers"
    label = "raising_receivers"

    def ready(self) -> None:
        from django_cadence import signals

        for name in SIGNALS:
            getattr(signals, name).connect(notify, dispatch_uid=f"raising-{name}")
