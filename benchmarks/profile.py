"""Summaries of a py-spy ``--format raw --threads --gil`` profile, and of the workers' phase
timers. Only the thread holding the GIL is sampled: in a worker whose threads take turns on
one interpreter, that is where the time to start the next try goes.

Frames are aggregated per function (``name (file)``, line numbers dropped) and samples are
grouped per thread kind: the engine's main thread, the try threads (``cadence-try-*``), the
LISTEN thread.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

_LINE = re.compile(r":\d+\)$")


def _thread_kind(frame: str) -> str:
    if "MainThread" in frame:
        return "engine main thread"
    if "cadence-try" in frame:
        return "try threads"
    if "cadence-listener" in frame:
        return "listener thread"
    return "other threads"


def summarize(path: Path, top: int = 22) -> dict[str, Any]:
    if not path.exists():
        return {"text": f"(no profile at {path})", "inclusive": [], "self": []}
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if f and not f.startswith("process ")]
        kind = "other threads"
        if frames and frames[0].startswith("thread "):
            kind = _thread_kind(frames.pop(0))
        frames = [_LINE.sub(")", f) for f in frames]
        if not frames:
            continue
        total += n
        threads[kind] += n
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    if not total:
        return {"text": f"(empty profile {path})", "inclusive": [], "self": []}

    def pct(n: int) -> str:
        return f"{100 * n / total:5.1f}%"

    lines = [f"py-spy samples of the GIL holder: {total} ({path.name}); by thread:"]
    lines += [f"  {pct(n)}  {k}" for k, n in threads.most_common()]
    lines.append("inclusive (per function):")
    lines += [f"  {pct(n)}  {f}" for f, n in inclusive.most_common(top)]
    lines.append("self:")
    lines += [f"  {pct(n)}  {f}" for f, n in own.most_common(top)]
    return {
        "text": "\n".join(lines),
        "samples": total,
        "threads": dict(threads),
        "inclusive": inclusive.most_common(80),
        "self": own.most_common(80),
    }


def summarize_phases(paths: list[Path]) -> dict[str, Any]:
    """The workers' phase timers (``benchmarks/app/phases.py``), summed, per try started.

    Per try: each phase's totals divided by the tries run (``run_try`` calls), so a
    workload's figures read as what one firing costs in each step.
    """
    totals: dict[str, dict[str, float]] = {}  # in the order the phases are listed
    for path in paths:
        if not path.exists():
            continue
        for row in json.loads(path.read_text()):
            total = totals.setdefault(row["phase"], {"calls": 0, "cpu_s": 0.0, "wall_s": 0.0})
            for key in total:
                total[key] += row[key]
    tries = next((t["calls"] for p, t in totals.items() if p.startswith("try threads")), 0)
    rows = [
        {
            "phase": phase,
            "calls": int(t["calls"]),
            "cpu_ms": 1000 * t["cpu_s"],
            "wall_ms": 1000 * t["wall_s"],
            "cpu_us_per_try": 1e6 * t["cpu_s"] / tries if tries else None,
            "wall_us_per_try": 1e6 * t["wall_s"] / tries if tries else None,
        }
        for phase, t in totals.items()
    ]
    return {"tries": tries, "rows": rows}
