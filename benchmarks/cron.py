"""The cron math's cost per call, no database: refusing an expression that never fires
(decided from its fields, so in bounded time: a search would walk 400 years of calendar
first) and finding a schedule's next instant (what the planner asks once per occurrence).

Each call is timed alone, so the table shows distributions: the median and the tail, in
microseconds. The validation is timed cold (its cache cleared), as a form or a deploy
validates an expression once; the next instant warm (the expression parsed), as the planner
asks it tick after tick.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django_cadence.exceptions import InvalidSpec
from django_cadence.schedule import cron_syntax
from django_cadence.schedule.specs import cron_instants, validate_cron

from . import harness

CALLS = 2000
ZONE = ZoneInfo("America/New_York")  # with a DST gap and fold each year
AFTER = datetime(2026, 1, 1, tzinfo=UTC)
NEVER_FIRES = ("59 23 31 2,4,6,9,11 */3", "0 0 30,31 feb *", "0 0 31 4-6/2 *")
VALID = (
    "* * * * *",
    "*/5 * * * *",
    "30 2 * * *",
    "0 0 29 2 *",
    "0 0 29 2 1",
    "0 0 29 2 */7",
    "0 18 L * *",
)


def _micros(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_us": ordered[len(ordered) // 2] * 1e6,
        "p99_us": ordered[int(len(ordered) * 0.99)] * 1e6,
        "max_us": ordered[-1] * 1e6,
    }


def validation_times(expr: str) -> list[float]:
    """``validate_cron(expr)`` timed call by call, each from an empty parse cache."""
    times = []
    for _ in range(CALLS):
        cron_syntax._parse_collapsed.cache_clear()
        started = time.perf_counter()
        with contextlib.suppress(InvalidSpec):
            validate_cron(expr)
        times.append(time.perf_counter() - started)
    return times


def next_instant_times(expr: str) -> list[float]:
    """The next instant of ``expr`` after a different instant each call, over a year."""
    next(cron_instants(expr, ZONE, AFTER))  # parsed once, as the planner has it
    times = []
    for n in range(CALLS):
        after = AFTER + timedelta(days=n % 365, minutes=n)
        started = time.perf_counter()
        next(cron_instants(expr, ZONE, after))
        times.append(time.perf_counter() - started)
    return times


def run() -> dict[str, Any]:
    rows = [
        {"call": "validate (never fires)", "expression": e, **_micros(validation_times(e))}
        for e in NEVER_FIRES
    ]
    rows += [
        {"call": "next instant", "expression": e, **_micros(next_instant_times(e))} for e in VALID
    ]
    return {
        "workload": "cron",
        "title": f"the cron math, {CALLS} single calls each, in {ZONE.key}",
        "system": "django-cadence",
        "db": "none",
        "engine_revision": harness.engine_revision(),
        "rows": rows,
    }


def main() -> None:
    result = run()
    path = harness.write_result(result)
    print(harness.render(result))
    print(f"-> {path.relative_to(harness.ROOT)}\n", flush=True)
