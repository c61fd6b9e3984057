"""Start tries claimed ahead of their instant on that instant, from a timer, not the database.

A try claimed before its start time (``CADENCE_CLAIM_AHEAD``, docs/design.md "The engine")
waits here. One thread sleeps until the earliest start and hands every try whose start has
come to ``launch``, all at once. The instant is read from ``now``, the engine clock's
estimate, which is never ahead of the database server's (invariant 6: never early) and never
waits on the server, and re-read at least every ``START_TIMER_STEP`` so a stepped clock is
followed.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Generic, TypeVar

from .tuning import START_TIMER_STEP

T = TypeVar("T")

logger = logging.getLogger("django_cadence.engine")


class StartTimer(Generic[T]):
    """Items to launch at their instants, on one thread started on first use."""

    def __init__(
        self,
        now: Callable[[], datetime],
        launch: Callable[[list[T]], None],
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self.now = now
        self.launch = launch
        # Told when ``launch`` raised: the timer goes on, and what it failed to launch is
        # its owner's to deal with (a worker that cannot make threads must be replaced).
        self.on_error = on_error or _log_error
        self._heap: list[tuple[datetime, int, T]] = []
        self._order = itertools.count()  # ties keep their order; items are never compared
        self._waiting: set[int] = set()  # ids of the items still to launch
        self._removed: set[int] = set()  # ids of items taken back, still in the heap
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._waiting)

    def add(self, at: datetime, item: T) -> None:
        """Launch ``item`` once the engine clock reads ``at``."""
        with self._cond:
            heapq.heappush(self._heap, (at, next(self._order), item))
            self._waiting.add(id(item))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="cadence-start-timer", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def next_start(self) -> datetime | None:
        """The earliest instant an item waits for (None when none waits)."""
        with self._cond:
            self._drop_removed_head()
            return self._heap[0][0] if self._heap else None

    def discard(self, item: T) -> bool:
        """Take ``item`` back before its instant; False if it was launched (or never added).
        Constant time: a worker that loses its session may take back a thousand at once."""
        with self._cond:
            if id(item) not in self._waiting:
                return False
            self._waiting.discard(id(item))
            self._removed.add(id(item))
            return True

    def take_all(self) -> list[T]:
        """Every item not launched yet, taken back (a drain hands them back unstarted)."""
        with self._cond:
            items = [entry[2] for entry in self._heap if id(entry[2]) in self._waiting]
            self._heap.clear()
            self._waiting.clear()
            self._removed.clear()
            return items

    def _drop_removed_head(self) -> None:
        """Pop the items taken back from the top of the heap (call under the condition)."""
        while self._heap and id(self._heap[0][2]) in self._removed:
            _, _, item = heapq.heappop(self._heap)
            self._removed.discard(id(item))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _due(self) -> list[T]:
        """Pop the items whose instant has come (call under the condition)."""
        now = self.now()
        due = []
        while self._heap and self._heap[0][0] <= now:
            _, _, item = heapq.heappop(self._heap)
            if id(item) in self._removed:
                self._removed.discard(id(item))
            else:
                self._waiting.discard(id(item))
                due.append(item)
        return due

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    due = self._due()
                    if due:
                        break
                    wait = START_TIMER_STEP
                    self._drop_removed_head()  # do not wake for an item taken back
                    if self._heap:
                        left = (self._heap[0][0] - self.now()).total_seconds()
                        wait = min(wait, max(left, 0.0))
                    self._cond.wait(wait if self._heap else None)
            try:
                self.launch(due)
            except Exception as error:  # noqa: BLE001 - reported; the timer must not die of it
                self.on_error(error)


def _log_error(error: Exception) -> None:
    logger.error("start timer could not launch tries: %r", error, exc_info=error)
