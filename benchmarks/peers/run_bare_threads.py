"""Bare threads runner: every start of the spec's active groups on its instant, no scheduler.

A timer thread sleeps until each instant and puts the names due then on a queue, which C
threads (``concurrency``, each with its connection open before the first instant) take and
run ``_runner.record`` on, as the other runners' jobs do. One-shots start once at their
instant, intervals every ``every`` seconds from theirs; idle groups (an hour or more away)
are never due in a run and are left out.
"""

from __future__ import annotations

import heapq
import queue
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

from benchmarks.peers import _runner

IDLE = 3600  # seconds: a group this far ahead is never due within a run


def main() -> None:
    config = _runner.load_config()
    dsn = config["dsn"]
    todo: queue.SimpleQueue[tuple[str, datetime] | None] = queue.SimpleQueue()
    connected = threading.Barrier(config["concurrency"] + 1)
    for _ in range(config["concurrency"]):
        threading.Thread(target=_work, args=(dsn, todo, connected), daemon=True).start()
    connected.wait()
    t0 = _runner.pick_t0(config)
    active = [g for g in config["spec"]["groups"] if g.get("offset", 0) < IDLE]
    threading.Thread(target=_fire, args=(instants(active, t0), todo), daemon=True).start()
    _runner.announce_ready(config, t0)
    _runner.wait_for_stop()


def _work(dsn: str, todo: queue.SimpleQueue, connected: threading.Barrier) -> None:
    _runner.connection(dsn)
    connected.wait()
    while (item := todo.get()) is not None:
        name, due = item
        _runner.record(dsn, name, due)


def _fire(due: Iterator[tuple[datetime, list[str]]], todo: queue.SimpleQueue) -> None:
    for at, names in due:
        wait = (at - _runner.utcnow()).total_seconds()
        if wait > 0:
            time.sleep(wait)
        for name in names:
            todo.put((name, at))


def instants(groups: list[dict], t0: datetime) -> Iterator[tuple[datetime, list[str]]]:
    """Each instant of the groups, in order, with the names due then (endless if any group
    is an interval)."""
    due: dict[datetime, list[tuple[str, dict]]] = {}
    for name, group, at in _runner.schedules({"groups": groups}, t0):
        due.setdefault(at, []).append((name, group))
    heap = list(due)
    heapq.heapify(heap)
    while heap:
        at = heapq.heappop(heap)
        entries = due.pop(at)
        yield at, [name for name, _ in entries]
        for name, group in entries:
            if group["kind"] == "interval":
                later = at + timedelta(seconds=group["every"])
                if later not in due:
                    heapq.heappush(heap, later)
                due.setdefault(later, []).append((name, group))


if __name__ == "__main__":
    main()
