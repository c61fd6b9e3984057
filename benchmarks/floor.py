"""The floor under W2's lag: one second's 200 job bodies on bare threads, no scheduler at all.

Each round puts 200 starts on a queue that 4, 8 or 16 threads, each with its connection open,
take from the moment they are released; a start is the job body's own first reading of the
clock, as in W2 (``_runner.record``: the local clock, then one INSERT on PostgreSQL). The
198th start of a round is what W2's lag p99 measures of a second; whatever a scheduler adds
(planning, claiming, dispatch) comes on top of it. Process CPU (user + system) per round
shows what the threads cost beyond the job: switching between them is system time.
"""

from __future__ import annotations

import queue
import resource
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

from . import harness
from .peers import _runner

STARTS = 200
RANK = 198  # W2's p99 within a second of 200 starts
ROUNDS = 20
THREADS = (4, 8, 16)


def _round(dsn: str, threads: int) -> tuple[float, float]:
    """One second's starts on ``threads`` threads: (the RANK-th start, process CPU), in ms."""
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(STARTS):
        todo.put(i)
    starts: list[float] = []
    release = threading.Event()
    due = datetime.now(UTC)

    def work() -> None:
        _runner.connection(dsn)  # open before the round, as a warm worker's threads are
        release.wait()
        while True:
            try:
                todo.get_nowait()
            except queue.Empty:
                return
            starts.append(time.perf_counter())
            _runner.record(dsn, "floor", due)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    time.sleep(0.1)
    before = resource.getrusage(resource.RUSAGE_SELF)
    released = time.perf_counter()
    release.set()
    for thread in pool:
        thread.join()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (sorted(starts)[RANK - 1] - released) * 1000, cpu * 1000


def run(dsn: str) -> dict[str, Any]:
    """Every thread count, ROUNDS rounds each; medians and quartiles."""
    rows = []
    for threads in THREADS:
        results = [_round(dsn, threads) for _ in range(ROUNDS)]
        ranks = sorted(r[0] for r in results)
        quartiles = statistics.quantiles(ranks, n=4)
        rows.append(
            {
                "threads": threads,
                f"start_{RANK}_p25_ms": quartiles[0],
                f"start_{RANK}_median_ms": statistics.median(ranks),
                f"start_{RANK}_p75_ms": quartiles[2],
                "cpu_ms_per_round": statistics.median(r[1] for r in results),
            }
        )
    return {
        "workload": "floor",
        "title": f"W2's floor: {STARTS} job bodies on bare threads, {ROUNDS} rounds each",
        "system": "bare-threads",
        "db": "postgresql",
        "engine_revision": "none (no scheduler)",
        "rows": rows,
    }


def main() -> None:
    """Run on a fresh benchmark database (its ``bench_firing`` table), print, and save."""
    harness.reset_database("postgresql")
    result = run(f"{harness.PG_DSN} dbname={harness.db_name()}")
    path = harness.write_result(result)
    print(harness.render(result))
    print(f"-> {path.relative_to(harness.ROOT)}\n", flush=True)
