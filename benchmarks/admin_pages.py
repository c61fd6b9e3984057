"""Admin page times with 10^4 and 10^6 attempts: ``python -m benchmarks admin``.

The database ``cadence_bench_admin`` (``CADENCE_BENCH_NAME``; SQLite: a file of that name in
``benchmarks/results/``) is dropped, recreated and migrated by ``harness.reset_database``, then
filled by ``admin_data`` and grown size by size, each size topping up the rows of the one
before and refreshing the planner statistics. At each size every page is fetched with Django's
test client, logged in as a superuser: once to warm caches, then ``--repeat`` times, each
response required to be a 200 and timed from request to rendered body, its SQL statements
counted with ``CaptureQueriesContext``. The test client keeps the database connection open
between requests, so connecting is not part of the figures.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from . import admin_data, harness

COLUMNS = [
    "page",
    "attempts",
    "median ms",
    "p95 ms",
    "max ms",
    "queries",
    "slowest query ms",
]
ADMIN = "/admin/django_cadence"


@dataclass(frozen=True)
class Page:
    name: str
    url: str


def pages(schedule_pk: int, attempt_pk: int, day: datetime) -> list[Page]:
    """The pages an operator opens, with real objects and a day that has attempts."""
    attempts = f"{ADMIN}/attempt/"
    month = {"occurrence_at__year": day.year, "occurrence_at__month": day.month}
    preview = {
        "kind": "cron",
        "cron": "30 9 * * 1-5",
        "timezone": "Europe/Paris",
        "object_id": schedule_pk,
    }
    return [
        Page("schedules", f"{ADMIN}/schedule/"),
        Page(
            "schedules: filter + search",
            f"{ADMIN}/schedule/?kind__exact=cron&last_outcome=succeeded&q=report",
        ),
        Page("schedule change form", f"{ADMIN}/schedule/{schedule_pk}/change/"),
        Page("attempts", attempts),
        Page("attempts: status=dead_letter", f"{attempts}?status__exact=dead_letter"),
        Page("attempts: schedule (dalf)", f"{attempts}?schedule__id__exact={schedule_pk}"),
        Page("attempts: month drill-down", f"{attempts}?{urlencode(month)}"),
        Page(
            "attempts: day drill-down",
            f"{attempts}?{urlencode({**month, 'occurrence_at__day': day.day})}",
        ),
        Page("attempts: search", f"{attempts}?q=report"),
        Page("attempts: search finding nothing", f"{attempts}?q=no-such-text"),
        Page("attempt detail (dead letter)", f"{attempts}{attempt_pk}/change/"),
        Page("dead letters", f"{ADMIN}/deadletter/"),
        Page("retries", f"{ADMIN}/retry/"),
        Page("workers", f"{ADMIN}/worker/"),
        Page("overview", f"{ADMIN}/overview/"),
        Page("admin index", "/admin/"),
        Page("schedule preview (JSON)", f"{ADMIN}/schedule/preview/?{urlencode(preview)}"),
    ]


class SlowestQuery:
    """An ``execute_wrapper`` keeping the slowest statement, timed to the microsecond."""

    def __init__(self) -> None:
        self.ms, self.sql = 0.0, ""

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            ms = (time.perf_counter() - started) * 1000
            if ms > self.ms:
                self.ms, self.sql = ms, f"{sql} -- params: {params!r}"[:3000]


def measure(client, page: Page, repeat: int) -> dict[str, Any]:
    """Warm once, then time ``repeat`` fetches; any answer but a 200 is an error."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def fetch():
        response = client.get(page.url)
        if response.status_code != 200:
            where = response.get("Location", "")
            raise RuntimeError(f"{page.name}: HTTP {response.status_code} for {page.url} {where}")
        return response

    fetch()
    times, counts, slowest = [], [], SlowestQuery()
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries, connection.execute_wrapper(slowest):
            started = time.perf_counter()
            fetch()
            times.append((time.perf_counter() - started) * 1000)
        counts.append(len(queries.captured_queries))
    times.sort()
    return {
        "page": page.name,
        "url": page.url,
        "median ms": statistics.median(times),
        "p95 ms": harness.percentile(times, 95),
        "max ms": times[-1],
        "queries": max(counts),
        "slowest query ms": slowest.ms,
        "slowest query": slowest.sql,
        "times_ms": times,
    }


def superuser_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_superuser("bench-admin", "bench@example.com", None)
    client = Client()
    client.force_login(user)
    return client


def run(db: str, sizes: list[int], repeat: int) -> dict[str, Any]:
    from django_cadence.models import Attempt, Status

    print(f"# resetting {harness.db_name()} on {db}", flush=True)
    harness.reset_database(db)
    anchor = harness.utcnow().replace(second=0, microsecond=0)
    schedules = admin_data.make_schedules(anchor)
    client = superuser_client()
    rows, population = [], []
    for size in sorted(sizes):
        print(f"# populating {size:,} attempts", flush=True)
        started = time.monotonic()
        added = admin_data.top_up(schedules, anchor, size, lambda line: print(line, flush=True))
        inserted = time.monotonic()
        admin_data.analyze()
        done = time.monotonic()
        population.append(
            {
                "attempts": size,
                "added": added,
                "insert s": inserted - started,
                "analyze s": done - inserted,
            }
        )
        print(harness.table(population[-1:]), flush=True)
        dead = Attempt.objects.filter(status=Status.DEAD_LETTER).order_by("-occurrence_at")
        day = (anchor - timedelta(days=1)).astimezone(UTC)
        for page in pages(schedules[0].pk, dead.values_list("pk", flat=True)[0], day):
            row = {"attempts": size, **measure(client, page, repeat)}
            rows.append(row)
            print(f"  {page.name}: {harness.fmt(row['median ms'])} ms", flush=True)
    return {
        "workload": "admin",
        "title": "admin page times",
        "system": "cadence",
        "db": db,
        "database": harness.db_name(),
        "engine_revision": harness.engine_revision(),
        "started_at": anchor,
        "repeat": repeat,
        "sizes": sorted(sizes),
        "population": population,
        "columns": COLUMNS,
        "rows": rows,
        "noise": harness.other_pg_activity(),
        "notes": [],
    }


def render(result: dict[str, Any]) -> str:
    head = (
        f"== admin pages | db={result['db']} database={result['database']} "
        f"repeat={result['repeat']} engine={result['engine_revision']}"
    )
    parts = [head, harness.table(result["rows"], result["columns"]), "population:"]
    parts.append(harness.table(result["population"]))
    if result["noise"]:
        parts.append(f"note: other databases active on the server: {', '.join(result['noise'])}")
    return "\n".join(parts)
