"""Each worker's notifier: a thread of its own that resolves the episodes that cleared and
sends the deliveries that are due, so a slow or failing channel costs the ticks and the
tries nothing (docs/design.md, "Notifications").

It polls the outbox every ``POLL`` (an indexed read of nothing, as a rule) and at once when
this process wrote a delivery (``episodes.WAKE``), and looks for cleared episodes every
``CLEAR_PROBE``. A database outage is logged and waited out; the thread closes its own
connection when it stops.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from django.db import DatabaseError, connections

from ..executors.log_text import log_value
from . import clearing, episodes, outbox

logger = logging.getLogger("django_cadence.notify")

POLL = 1.0  # seconds between two reads of the outbox
CLEAR_PROBE = 5.0  # seconds between two looks for cleared episodes
OUTAGE_WAIT = 5.0  # seconds to wait after the database failed


class Notifier:
    def __init__(self, worker_id: str, now: Callable[[], datetime]) -> None:
        self.worker_id = worker_id
        self.now = now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_clear = 0.0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="cadence-notify", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the send under way (bounded by its channel's timeout) or ``timeout``."""
        self._stop.set()
        episodes.WAKE.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_once(self) -> None:
        """Resolve what cleared (every ``CLEAR_PROBE``), then send what is due."""
        if time.monotonic() >= self._next_clear:
            self._next_clear = time.monotonic() + CLEAR_PROBE
            clearing.resolve_cleared(self.now())
        outbox.deliver_due(self.now, self.worker_id)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                episodes.WAKE.clear()
                wait = POLL
                try:
                    self.run_once()
                except DatabaseError as exc:
                    logger.warning("notifier: database unavailable: %s", log_value(exc))
                    connections.close_all()
                    wait = OUTAGE_WAIT
                except Exception as exc:
                    logger.exception("notifier failed: %s", log_value(exc))
                episodes.WAKE.wait(wait)
        finally:
            connections.close_all()  # this thread's own
