"""Notifications: tell people when something breaks, once per episode, and when it clears.

``CADENCE_NOTIFY`` names the channels (mail, a signed webhook, Sentry Crons, a callable). An
episode (``models.Notice``) is opened by the write that records what broke, in its
transaction, and resolved by a worker's probe once it clears; each opening and resolution
becomes one ``Delivery`` per channel, sent by a thread of each worker (``sender``), never by
a tick or a try (docs/design.md, "Notifications"). The modules: ``routing`` (which channels
take a notice), ``messages`` (the body every channel gets), ``episodes`` (open, count,
resolve), ``failures`` (failed tries in a row), ``clearing`` (what resolves an episode),
``outbox`` (claim, send, retry), ``channels`` and ``signing`` (mail, webhook, callable),
``sentry`` (check-ins), ``sender`` (the thread).
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.db import transaction

from .. import store
from ..conf import cadence_settings


def enabled() -> bool:
    """True when ``CADENCE_NOTIFY`` configures a channel that takes episodes."""
    return any(c.type != "sentry" for c in cadence_settings.NOTIFY.channels)


def atomic() -> Any:
    """A transaction for a write and the episode it opens; nothing when notifications are
    off, so an engine without them runs the statements it always ran."""
    if enabled():
        return transaction.atomic(using=store.alias())
    return contextlib.nullcontext()
