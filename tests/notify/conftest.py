"""A real SMTP receiver (``tests/support/receivers.py``) and ``CADENCE_NOTIFY`` for the tests;
the webhook receiver, ``hook``, is in ``tests/conftest.py``: the admin and the fleet use it too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.receivers import Mailbox, serve_smtp, smtp_settings


@pytest.fixture
def smtp(settings) -> Iterator[Mailbox]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1, Django's SMTP backend pointed at it."""
    box, controller = serve_smtp()
    for name, value in smtp_settings(box).items():
        setattr(settings, name, value)
    yield box
    controller.stop()


@pytest.fixture
def notify(settings):
    """Configure ``CADENCE_NOTIFY``: ``notify(channels={...}, failures=3)``."""

    def configure(**value: Any) -> None:
        settings.CADENCE_NOTIFY = value

    return configure
