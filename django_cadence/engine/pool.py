"""Reusable threads for tries, which keep their database connections between tries.

A thread per try would open a new database connection for every job that touches the
database (a new server process on PostgreSQL). These threads live on, and so do their
connections, unless one broke. A try that timed out may never give its thread back, so
the pool never waits for one: it starts a new thread whenever none is idle, and threads
beyond the pool's size exit when they finish.

Threads start only when a try needs one, and a thread idle for ``THREAD_IDLE_EXIT`` exits
and closes its connections: a pool sized for a burst costs nothing between bursts.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable

from django.db import DatabaseError, connections

from .tuning import CLOSE_WAIT, THREAD_IDLE_EXIT


def _drop_broken_connections() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.connection is None:
            continue
        broken = connection.errors_occurred and not connection.is_usable()
        if broken or connection.in_atomic_block:  # a job that left a transaction open
            with contextlib.suppress(DatabaseError):
                connection.close()


class TryPool:
    def __init__(
        self, size: int, name: str = "cadence-try", idle_exit: float = THREAD_IDLE_EXIT
    ) -> None:
        self.size = size
        self.idle_exit = idle_exit
        self.name = name
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._all: list[threading.Thread] = []

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                self._start_thread(None)
        self._tasks.put(task)

    def warm(self, threads: int, task: Callable[[], None]) -> None:
        """Start threads until ``threads`` are alive (at most the pool's size), each running
        ``task`` (opening its database connection) and then idle: tries claimed ahead of a
        burst start on threads that are ready, not on threads being made."""
        with self._lock:
            for _ in range(min(threads, self.size) - self._threads):
                self._start_thread(task)

    def _start_thread(self, first: Callable[[], None] | None) -> None:
        """A new thread that runs ``first`` (if any), then tasks from the queue (call under
        the lock)."""
        self._threads += 1
        thread = threading.Thread(
            target=self._work, args=(first,), name=f"{self.name}-{self._threads}", daemon=True
        )
        self._all = [t for t in self._all if t.is_alive()] + [thread]
        try:
            thread.start()
        except BaseException:
            self._threads -= 1  # never started (the process can make no more threads)
            self._all.remove(thread)
            raise

    def _work(self, first: Callable[[], None] | None = None) -> None:
        try:
            task = first
            while True:
                if task is None:
                    try:
                        task = self._tasks.get(timeout=self.idle_exit)
                    except queue.Empty:
                        if self._leave_idle():
                            return
                        continue  # a task was handed to an idle thread meanwhile: take it
                    if task is None:
                        return  # shutdown
                try:
                    task()
                finally:
                    task = None
                    _drop_broken_connections()
                with self._lock:
                    if self._threads > self.size:
                        self._threads -= 1
                        return
                    self._idle += 1
        finally:
            connections.close_all()

    def _leave_idle(self) -> bool:
        """An idle thread leaves, unless a submit counted on it (its task is on its way)."""
        with self._lock:
            if self._idle <= 0:
                return False
            self._idle -= 1
            self._threads -= 1
            return True

    @property
    def threads(self) -> int:
        """Threads alive: running a try or idle."""
        with self._lock:
            return self._threads

    def shutdown(self, timeout: float = CLOSE_WAIT) -> None:
        """Stop idle threads and wait (up to ``timeout``) until they closed their connections.

        Busy threads finish their try first and then exit, since the pool's size drops to 0.
        """
        with self._lock:
            self.size = 0
            idle, self._idle = self._idle, 0
            self._threads -= idle
            stopping = [t for t in self._all if t.is_alive()]
        for _ in range(idle):
            self._tasks.put(None)
        deadline = time.monotonic() + timeout
        for thread in stopping:
            thread.join(max(0.0, deadline - time.monotonic()))
