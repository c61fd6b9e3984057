"""``compare``: ours and every peer on the same workloads, back to back, on PostgreSQL.

Each figure is shown for every system, with the best peer and the ratio ours / best peer
(for lags and CPU lower is better, so a ratio under 1 means we are ahead; for "fired" higher
is better). A peer that cannot express a workload, or is not implemented, says so. The
control (``bare-threads``: no scheduler, each start from memory on its instant) is shown
too, with the ratio ours / control: what is left of a lag once the scheduler's part is gone.
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from . import harness
from .ours import Cadence
from .peers import PEERS, NotSupported
from .workloads import OURS

# (row selector, figure, lower is better)
FIGURES: dict[str, list[tuple[int, str, bool]]] = {
    "W1": [
        (0, "p50_ms", True),
        (0, "p99_ms", True),
        (0, "last_start_s", True),
        (0, "missing", True),
        (0, "duplicates", True),
        (0, "engine_cpu_s", True),
        (0, "db_cpu_s", True),
    ],
    "W2": [
        (0, "fired", False),
        (0, "duplicates", True),
        (0, "p50_ms", True),
        (0, "p99_ms", True),
        (0, "engine_cpu_s", True),
        (0, "db_cpu_s", True),
    ],
    "W3": [
        (1, "p99_ms", True),
        (1, "engine_cpu_s", True),
        (1, "db_cpu_s", True),
        (2, "p99_ms", True),
        (2, "engine_cpu_s", True),
    ],
}
NOT_IMPLEMENTED: dict[str, str] = {}
# Controls run beside the peers but are not one: ours is shown as a ratio to each.
CONTROLS = [name for name, peer in PEERS.items() if peer.control]
# The peers' thread pools when ``--concurrency`` is not given: the setting every earlier
# comparison used, so the control stays comparable from run to run.
PEER_CONCURRENCY = 8


def _run(system, workload: str, quick: bool) -> dict[str, Any]:
    try:
        result = OURS[workload](system, "postgresql", quick=quick)
    except NotSupported as exc:
        result = {"status": "not supported", "reason": str(exc), "rows": []}
    except Exception as exc:  # noqa: BLE001 - one peer failing must not stop the comparison
        traceback.print_exc()
        result = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}", "rows": []}
    result.setdefault("workload", workload)
    result["system"] = system.name
    result.setdefault("db", "postgresql")
    return result


def compare(args) -> list[dict[str, Any]]:
    names = list(PEERS) + list(NOT_IMPLEMENTED)
    if args.peers:
        names = [n for n in names if n in args.peers.split(",")]
    summary: list[dict[str, Any]] = []
    for workload in args.workloads:
        results = {}
        run_dir = harness.LOGS / f"{harness.utcnow():%Y%m%dT%H%M%SZ}-compare-{workload}"
        run_dir.mkdir(parents=True, exist_ok=True)
        ours = Cadence("postgresql", workers=1, concurrency=args.concurrency, run_dir=run_dir)
        results["cadence"] = _emit(_run(ours, workload, args.quick))
        for name in names:
            if name in NOT_IMPLEMENTED:
                results[name] = _emit(
                    {
                        "workload": workload,
                        "system": name,
                        "db": "postgresql",
                        "status": "not implemented",
                        "reason": NOT_IMPLEMENTED[name],
                    }
                )
                continue
            peer = PEERS[name](run_dir=run_dir, concurrency=args.concurrency or PEER_CONCURRENCY)
            results[name] = _emit(_run(peer, workload, args.quick))
        summary += _figures(workload, results)
    print("== compare: ours / best peer")
    print(harness.table(summary))
    path = harness.RESULTS / f"{harness.utcnow():%Y%m%dT%H%M%SZ}-compare.json"
    path.write_text(json.dumps(summary, indent=2, default=str))
    print(f"-> {path.relative_to(harness.ROOT)}")
    return summary


def _emit(result: dict[str, Any]) -> dict[str, Any]:
    result.setdefault("notes", [])
    if result.get("status", "ok") == "ok":
        harness.write_result(result)
    print(harness.render(result), flush=True)
    print(flush=True)
    return result


def _figures(workload: str, results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for index, figure, lower in FIGURES[workload]:
        row: dict[str, Any] = {"workload": workload, "figure": _label(results, index, figure)}
        values = {}
        for system, result in results.items():
            status = result.get("status", "ok")
            if status != "ok":
                row[system] = status
                continue
            value = result["rows"][index].get(figure) if len(result["rows"]) > index else None
            row[system] = value
            if system in CONTROLS:
                continue
            if system != "cadence" and isinstance(value, int | float):
                values[system] = value
        ours = row.get("cadence")
        for control in CONTROLS:
            floor = row.get(control)
            if isinstance(ours, int | float) and isinstance(floor, int | float) and floor:
                row[f"ours/{control}"] = ours / floor
        if values:
            best = (min if lower else max)(values, key=values.get)
            row["best_peer"] = best
            if isinstance(ours, int | float) and values[best]:
                row["ours/best"] = ours / values[best]
            elif isinstance(ours, int | float) and ours == values[best]:
                row["ours/best"] = 1.0
        rows.append(row)
    return rows


def _label(results: dict[str, dict[str, Any]], index: int, figure: str) -> str:
    if index == 0:
        return figure
    for result in results.values():
        if len(result.get("rows", ())) > index:
            return f"{figure} (idle={result['rows'][index].get('idle')})"
    return figure
