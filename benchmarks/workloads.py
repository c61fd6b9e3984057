"""The six workloads. W1-W3 take any system (ours or a peer); W4-W6 are ours only.

Every workload starts from a freshly recreated database, creates its schedules, starts the
system, measures, and stops the system in a ``finally``. Lag is ``started_at - due_at`` of
the ``bench_firing`` rows the job wrote (one per start; the first start of an occurrence
counts for its lag, any further start is a duplicate).
"""

from __future__ import annotations

import time
from datetime import date, timedelta
from typing import Any

from . import harness
from .harness import Firings, goal, utcnow

W1_COUNT = 1000
W2_COUNT = 200
W3_ACTIVE = 10
W3_IDLE = (100, 100_000)
W5_COUNT = 2000
W6_QUEUES = 10
# Each queue's worker runs 2 threads (20 in all, against W1's default 8 on one worker): ten
# workers at the default 8 would hold more connections than PostgreSQL's default 100.
W6_THREADS = 2
W6_LEAD = 20.0  # ten workers start side by side on a small machine
WARMUP = 5.0
LEAD = 6.0


def _base(workload: str, title: str, system, db: str, quick: bool) -> dict[str, Any]:
    return {
        "workload": workload,
        "title": title,
        "system": system.name,
        "db": db,
        "workers": getattr(system, "workers", 1),
        "concurrency": getattr(system, "concurrency", None),
        "quick": quick,
        "started": utcnow().isoformat(),
        "engine_revision": harness.engine_revision(),
        "rows": [],
        "goals": [],
        "notes": [],
        "noise": [],
    }


def _cpu(system, db: str) -> tuple[float, float]:
    return system.cpu(), harness.db_server_cpu(db)


def _delta(before: float, after: float) -> float | None:
    """A CPU difference; None when a counter went back (the server restarted meanwhile)."""
    return after - before if after >= before else None


def _check_setup(result: dict[str, Any], t0) -> None:
    spare = (t0 - utcnow()).total_seconds()
    if spare < 0.5:
        result["notes"].append(f"setup overran the lead: {spare:.2f} s left before the first due")


def _attempt_counts(start, end) -> dict[str, int]:
    """Our attempts by status for occurrences in [start, end) (empty for peers)."""
    from django.db.models import Count

    from django_cadence.models import Attempt

    rows = (
        Attempt.objects.filter(occurrence_at__gte=start, occurrence_at__lt=end)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return dict(rows)


# --- W1: burst -----------------------------------------------------------------------------


def w1(system, db: str, quick: bool = False) -> dict[str, Any]:
    result = _base("W1", "burst: 1,000 one-shots due at the same instant", system, db, quick)
    row = _burst(system, db, result, _burst_groups("w1-", queues=None))
    result["rows"] = [row]
    result["goals"] = _burst_goals(row)
    return result


def _burst_groups(prefix: str, queues: list[str] | None) -> list[dict[str, Any]]:
    """W1's 1,000 one-shots due at t0: in the default queue, or spread evenly over ``queues``."""
    if not queues:
        return [{"prefix": prefix, "count": W1_COUNT, "kind": "once", "offset": 0}]
    share, extra = divmod(W1_COUNT, len(queues))
    return [
        {
            "prefix": f"{prefix}{queue}-",
            "count": share + (i < extra),
            "kind": "once",
            "offset": 0,
            "queue": queue,
        }
        for i, queue in enumerate(queues)
    ]


def _burst(
    system, db: str, result: dict[str, Any], groups: list[dict[str, Any]], lead: float = LEAD
) -> dict:
    """Run a burst of one-shots due at one instant; its figures (W1's row)."""
    n = sum(group["count"] for group in groups)
    spec = {"workload": result["workload"], "job": "record", "groups": groups}
    harness.reset_database(db)
    result["noise"] = sorted(set(result["noise"]) | set(harness.other_pg_activity()))
    try:
        t0 = system.start(spec, lead=lead)
        _check_setup(result, t0)
        harness.sleep_until(t0 - timedelta(seconds=0.2))
        cpu0, db0 = _cpu(system, db)
        drained = _wait_for_firings(n, deadline=t0 + timedelta(seconds=90))
        cpu1, db1 = _cpu(system, db)
        time.sleep(2.0)  # a late duplicate would show up here
    finally:
        system.stop()
    firings = Firings.load()
    lags = firings.lags()
    stats = harness.lag_stats(lags)
    return {
        "fired": firings.distinct,
        "expected": n,
        "missing": n - firings.distinct,
        "duplicates": firings.duplicates,
        "p50_ms": stats["lag_p50_ms"],
        "p95_ms": stats["lag_p95_ms"],
        "p99_ms": stats["lag_p99_ms"],
        "max_ms": stats["lag_max_ms"],
        "last_start_s": max(lags) if lags else None,
        "drain_s": (drained - t0).total_seconds() if drained else None,
        "engine_cpu_s": _delta(cpu0, cpu1),
        "db_cpu_s": _delta(db0, db1),
    }


def _burst_goals(row: dict[str, Any]) -> list[dict[str, Any]]:
    p99, last = row["p99_ms"], row["last_start_s"]
    return [
        goal("lag p99 <= 250 ms", p99, p99 is not None and p99 <= 250),
        goal("last start <= 0.5 s after due", last, last is not None and last <= 0.5),
        goal("no missing, no duplicates", f"{row['missing']}/{row['duplicates']}", False)
        if row["missing"] or row["duplicates"]
        else goal("no missing, no duplicates", "0/0", True),
    ]


def _wait_for_firings(n: int, deadline) -> Any:
    from benchmarks.app.models import Firing

    while utcnow() < deadline:
        if Firing.objects.count() >= n:
            return utcnow()
        time.sleep(0.1)
    return None


# --- W2 / W3: steady -----------------------------------------------------------------------


def _steady(
    system,
    db: str,
    *,
    active: int,
    idle: int,
    duration: float,
    prefix: str,
    calendars: WorkloadCalendars | None = None,
) -> dict:
    groups = [{"prefix": prefix, "count": active, "kind": "interval", "every": 1, "offset": 0}]
    if idle:
        groups.insert(
            0,
            {
                "prefix": "idle-",
                "count": idle,
                "kind": "interval",
                "every": 86400,
                "offset": 86400,
            },
        )
    spec: dict[str, Any] = {
        "workload": prefix.rstrip("-").upper(),
        "job": "record",
        "groups": groups,
    }
    if calendars is not None:
        spec["calendars"] = calendars.definitions
        groups[-1]["calendars"] = calendars.busy
        if idle:
            groups[0]["calendars"] = calendars.idle
    harness.reset_database(db)
    noise = harness.other_pg_activity()
    setup_started = time.monotonic()
    try:
        t0 = system.start(spec, lead=LEAD)
        setup_s = time.monotonic() - setup_started
        late = (t0 - utcnow()).total_seconds()
        start = t0 + timedelta(seconds=WARMUP)
        end = start + timedelta(seconds=duration)
        harness.sleep_until(start)
        cpu0, db0 = _cpu(system, db)
        harness.sleep_until(end)
        cpu1, db1 = _cpu(system, db)
        time.sleep(3.0)  # the window's last occurrences finish
    finally:
        system.stop()
    firings = Firings.load(start, end)
    stats = harness.lag_stats(firings.lags())
    expected = active * round(duration)
    statuses = _attempt_counts(start, end) if system.name == "cadence" else {}
    return {
        "idle": idle,
        "fired": firings.distinct,
        "expected": expected,
        "duplicates": firings.duplicates,
        "missed": statuses.get("missed", 0),
        "skipped": statuses.get("skipped", 0),
        "p50_ms": stats["lag_p50_ms"],
        "p99_ms": stats["lag_p99_ms"],
        "max_ms": stats["lag_max_ms"],
        "engine_cpu_s": _delta(cpu0, cpu1),
        "db_cpu_s": _delta(db0, db1),
        "setup_s": setup_s,
        "_late": late,
        "_noise": noise,
    }


def _pop_meta(result: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    late = row.pop("_late")
    result["noise"] = sorted(set(result["noise"]) | set(row.pop("_noise")))
    if late < 0.5:
        result["notes"].append(
            f"idle={row['idle']}: setup overran the lead ({late:.2f} s left before the first due)"
        )
    return row


def w2(system, db: str, quick: bool = False) -> dict[str, Any]:
    duration = 20.0 if quick else 60.0
    result = _base(
        "W2", f"steady: 200 interval schedules every 1 s for {duration:g} s", system, db, quick
    )
    row = _pop_meta(
        result,
        _steady(system, db, active=W2_COUNT, idle=0, duration=duration, prefix="w2-"),
    )
    row.pop("idle")
    result["rows"] = [row]
    ok = row["fired"] == row["expected"] and row["duplicates"] == 0
    result["goals"] = [
        goal(
            f"{row['expected']:,}/{row['expected']:,} fired, 0 duplicates",
            f"{row['fired']:,}/{row['expected']:,}, {row['duplicates']} dup",
            ok,
        ),
        goal("lag p99 <= 50 ms", row["p99_ms"], row["p99_ms"] is not None and row["p99_ms"] <= 50),
    ]
    return result


W3_HOLIDAYS = 30
WEEKEND = ("sat", "sun")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class WorkloadCalendars:
    """W3's calendars: a weekends calendar and one of ``W3_HOLIDAYS`` holiday dates.

    The idle schedules run under ``bench-weekends`` and ``bench-holidays``. The busy ones
    must fire during the run, so their calendars exclude neither ``today`` nor the next day
    (a run may cross midnight): on a Friday, Saturday or Sunday their weekend calendar is
    ``bench-weekends-open`` with the weekend days left that are neither. The holiday dates,
    one every 12 days from the day after tomorrow, are never today or tomorrow.
    """

    def __init__(self, today: date) -> None:
        open_days = {WEEKDAYS[today.weekday()], WEEKDAYS[(today.weekday() + 1) % 7]}
        holidays = [(today + timedelta(days=2 + 12 * k)).isoformat() for k in range(W3_HOLIDAYS)]
        self.definitions: dict[str, dict[str, Any]] = {
            "bench-weekends": {"weekdays": list(WEEKEND)},
            "bench-holidays": {"dates": holidays},
        }
        self.idle = ["bench-weekends", "bench-holidays"]
        self.busy = ["bench-weekends", "bench-holidays"]
        if open_days & set(WEEKEND):
            rest = [day for day in WEEKEND if day not in open_days]
            self.definitions["bench-weekends-open"] = {"weekdays": rest} if rest else {}
            self.busy = ["bench-weekends-open", "bench-holidays"]


def w3(system, db: str, quick: bool = False, calendars: bool = False) -> dict[str, Any]:
    duration = 20.0 if quick else 60.0
    under = " under calendars" if calendars else ""
    result = _base(
        "W3",
        f"idle scale: 10 every 1 s beside 100 / 100,000 idle schedules{under}, {duration:g} s",
        system,
        db,
        quick,
    )
    rows = []
    for idle in W3_IDLE:
        sets = WorkloadCalendars(utcnow().date()) if calendars else None
        row = _steady(
            system,
            db,
            active=W3_ACTIVE,
            idle=idle,
            duration=duration,
            prefix="w3-",
            calendars=sets,
        )
        rows.append(_pop_meta(result, row))
        if sets is not None:
            result["calendars"] = {"definitions": sets.definitions, "busy": sets.busy}
    if calendars:
        result["notes"].append(
            "every schedule under calendars: the idle ones under bench-weekends and "
            f"bench-holidays ({W3_HOLIDAYS} dates), the busy ones under "
            f"{' and '.join(result['calendars']['busy'])} (neither excludes the run's days)"
        )
    small, big = rows

    def ratio(key: str) -> float | None:
        a, b = small.get(key), big.get(key)
        return None if not a or b is None else b / a

    ratios = {k: ratio(k) for k in ("p50_ms", "p99_ms", "max_ms", "engine_cpu_s", "db_cpu_s")}
    rows.append({"idle": "ratio 100k/100", **ratios})
    result["rows"] = rows
    cpu_ratio = ratios["engine_cpu_s"]
    result["goals"] = [
        goal(
            "lag p99 <= 50 ms (100k idle)",
            big["p99_ms"],
            big["p99_ms"] is not None and big["p99_ms"] <= 50,
        ),
        goal(
            "engine CPU within 1.2x of 100 idle",
            cpu_ratio,
            cpu_ratio is not None and cpu_ratio <= 1.2,
        ),
        goal(
            "all fired, no duplicates (100k idle)",
            f"{big['fired']}/{big['expected']}",
            big["fired"] == big["expected"] and big["duplicates"] == 0,
        ),
    ]
    return result


# --- W4: restart (ours) ----------------------------------------------------------------------

W4_POLICIES = ("skip", "fire_once", "fire_all")
W4_PER_POLICY = 10
W4_GRACE = 5.0


def w4(system, db: str, quick: bool = False) -> dict[str, Any]:
    """10 schedules per misfire policy every 1 s; kill -9 at 20 s, down 15 s, then 20 s more."""
    result = _base(
        "W4",
        "restart: kill -9 after 20 s, down 15 s, 20 s more; misfire_grace 5 s",
        system,
        db,
        quick,
    )
    groups = [
        {
            "prefix": f"w4-{policy}-",
            "count": W4_PER_POLICY,
            "kind": "interval",
            "every": 1,
            "offset": 0,
            "misfire": policy,
            "grace": W4_GRACE,
        }
        for policy in W4_POLICIES
    ]
    harness.reset_database(db)
    result["noise"] = harness.other_pg_activity()
    try:
        t0 = system.start({"workload": "W4", "job": "record", "groups": groups}, lead=LEAD)
        _check_setup(result, t0)
        harness.sleep_until(t0 + timedelta(seconds=20))
        killed = utcnow()
        system.kill9("w1")
        harness.sleep_until(killed + timedelta(seconds=15))
        restarted = utcnow()
        system.start_worker("w1")
        ready = utcnow()
        harness.sleep_until(ready + timedelta(seconds=20))
        cut = utcnow() - timedelta(seconds=1)  # occurrences due from here on may be in flight
        time.sleep(2.0)
    finally:
        system.stop()
    result["params"] = {
        "t0": t0.isoformat(),
        "killed": killed.isoformat(),
        "restarted": restarted.isoformat(),
        "ready_after_s": (ready - restarted).total_seconds(),
    }
    rows = [_w4_row(policy, t0, killed, ready, cut) for policy in W4_POLICIES]
    result["rows"] = rows
    result["notes"].append(
        "outage = occurrences due between the kill and the restarted engine's first tick; "
        f"those within misfire_grace ({W4_GRACE:g} s) of it are not misfired and run late "
        "under every policy. 'unaccounted' counts occurrences of the whole run with neither a "
        "start nor a missed/skipped record (invariant 4): it must be 0."
    )
    result["goals"] = [
        goal(
            f"{r['policy']}: nothing unaccounted, no duplicates",
            f"{r['unaccounted']}/{r['duplicates']}",
            r["unaccounted"] == 0 and r["duplicates"] == 0,
        )
        for r in rows
    ]
    return result


def _grid(t0, start, end) -> int:
    """Occurrences of a 1-s schedule anchored at t0, due in [start, end)."""
    first = max(0, int(-(-(start - t0).total_seconds() // 1)))
    last = int(-(-(end - t0).total_seconds() // 1))  # exclusive
    return max(0, last - first)


def _w4_row(policy: str, t0, killed, ready, cut) -> dict[str, Any]:
    from django_cadence.models import Attempt

    prefix = f"w4-{policy}-"
    all_firings = Firings([r for r in Firings.load(t0, cut).rows if r[0].startswith(prefix)])
    outage = Firings([r for r in all_firings.rows if killed <= r[1] < ready])
    missed = skipped = 0
    for status, outcome, _occurrence in Attempt.objects.filter(
        schedule__name__startswith=prefix, status__in=("missed", "skipped"), occurrence_at__lt=cut
    ).values_list("status", "outcome", "occurrence_at"):
        if status == "missed":
            missed += (outcome or {}).get("missed", 1)
        else:
            skipped += 1
    expected_outage = _grid(t0, killed, ready) * W4_PER_POLICY
    expected_all = _grid(t0, t0, cut) * W4_PER_POLICY
    lags = outage.lags()
    collapsed_into = (
        len({name for name, _, _ in outage.rows}) if policy == "fire_once" and missed else 0
    )
    return {
        "policy": policy,
        "outage_occurrences": expected_outage,
        "outage_ran": outage.distinct,
        "missed_recorded": missed,
        "collapsed_runs": collapsed_into,
        "skipped": skipped,
        "unaccounted": expected_all - all_firings.distinct - missed - skipped,
        "duplicates": all_firings.duplicates,
        "catchup_lag_max_s": max(lags) if lags else None,
    }


# --- W5: throughput (ours) -----------------------------------------------------------------


def w5(system, db: str, quick: bool = False) -> dict[str, Any]:
    from django.db.models import Count, Max, Min

    from django_cadence.models import Attempt

    n = 1000 if quick else W5_COUNT
    result = _base("W5", f"throughput: {n:,} no-op one-shots due at once", system, db, quick)
    spec = {
        "workload": "W5",
        "job": "noop",
        "groups": [{"prefix": "w5-", "count": n, "kind": "once", "offset": 0}],
    }
    harness.reset_database(db)
    result["noise"] = harness.other_pg_activity()
    try:
        t0 = system.start(spec, lead=LEAD)
        _check_setup(result, t0)
        harness.sleep_until(t0 - timedelta(seconds=0.6))
        system.snapshot_queries()
        cpu0, db0 = _cpu(system, db)
        deadline = t0 + timedelta(seconds=180)
        done = 0
        while utcnow() < deadline:
            done = Attempt.objects.filter(status="succeeded").count()
            if done >= n:
                break
            time.sleep(0.2)
        cpu1, db1 = _cpu(system, db)
        system.snapshot_queries()
    finally:
        system.stop()
    agg = Attempt.objects.filter(status="succeeded").aggregate(
        first=Min("started_at"), last_start=Max("started_at"), last=Max("finished_at")
    )
    per_worker = dict(
        Attempt.objects.values_list("worker").annotate(n=Count("id")).order_by("worker")
    )
    queries = system.queries_between_snapshots()
    total_queries = sum(queries.values())
    drain = (agg["last"] - t0).total_seconds() if agg["last"] else None
    row = {
        "db": db,
        "workers": system.workers,
        "fired": done,
        "drain_s": drain,
        "firings_per_s": done / drain if drain else None,
        "first_start_lag_s": (agg["first"] - t0).total_seconds() if agg["first"] else None,
        "sql_per_firing": total_queries / done if done else None,
        "engine_cpu_ms_per_firing": (cpu1 - cpu0) * 1000 / done if done else None,
        "db_cpu_ms_per_firing": (db1 - db0) * 1000 / done if done else None,
    }
    result["rows"] = [row]
    result["per_worker"] = per_worker
    result["queries_by_kind"] = queries
    result["notes"].append(
        "SQL statements by kind over the drain (all workers): "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(queries.items(), key=lambda kv: -kv[1]))
    )
    fps, spf = row["firings_per_s"], row["sql_per_firing"]
    if system.workers == 1:
        result["goals"].append(
            goal(">= 2,000 firings/s on one worker", fps, bool(fps) and fps >= 2000)
        )
    result["goals"].append(
        goal("<= 4 SQL statements per firing", spf, spf is not None and spf <= 4)
    )
    return result


# --- W6: queues (ours) ----------------------------------------------------------------------


def w6(system, db: str, quick: bool = False) -> dict[str, Any]:
    """W1's burst in one queue on one worker, then spread over 10 queues with one worker
    each (``run_cadence --queues qN``), back to back; the goal is the ratio of their p99."""
    if db == "sqlite":
        raise SystemExit("W6 runs a worker per queue: PostgreSQL or MariaDB, not SQLite")
    result = _base(
        "W6",
        f"queues: 1,000 one-shots due at once, in 1 queue on 1 worker, then in {W6_QUEUES} "
        "queues on a worker each",
        system,
        db,
        quick,
    )
    system.queues = None
    one = {"queues": 1, "workers": 1, "threads_each": system.threads_of("w1")}
    one |= _burst(system, db, result, _burst_groups("w6-", queues=None), lead=W6_LEAD)
    one["wrong_queue"] = 0  # every worker serves every queue
    queues = [f"q{i}" for i in range(1, W6_QUEUES + 1)]
    system.queues, system.queue_concurrency = queues, W6_THREADS
    many = {"queues": W6_QUEUES, "workers": W6_QUEUES, "threads_each": W6_THREADS}
    many |= _burst(system, db, result, _burst_groups("w6-", queues=queues), lead=W6_LEAD)
    many["wrong_queue"] = _wrong_queue(system)
    ratios: dict[str, Any] = {"queues": f"ratio {W6_QUEUES}/1"}
    for key in ("p50_ms", "p99_ms", "last_start_s", "engine_cpu_s", "db_cpu_s"):
        a, b = one.get(key), many.get(key)
        ratios[key] = None if not a or b is None else b / a
    result["rows"] = [one, many, ratios]
    result["workers"] = f"1, then {W6_QUEUES}"
    result["concurrency"] = f"{one['threads_each']}, then {W6_THREADS} each"
    p99_ratio = ratios["p99_ms"]
    result["goals"] = [
        goal(
            f"lag p99 in {W6_QUEUES} queues within 1.5x of 1 queue",
            p99_ratio,
            p99_ratio is not None and p99_ratio <= 1.5,
        ),
        goal(
            "no missing, no duplicates (both)",
            f"{one['missing'] + many['missing']}/{one['duplicates'] + many['duplicates']}",
            not (one["missing"] or many["missing"] or one["duplicates"] or many["duplicates"]),
        ),
        goal(
            "every attempt ran on a worker of its queue",
            many["wrong_queue"],
            many["wrong_queue"] == 0,
        ),
    ]
    result["notes"].append(
        "wrong_queue counts attempts run by a worker that does not serve their schedule's "
        "queue, or not run at all"
    )
    return result


def _wrong_queue(system) -> int:
    """Attempts of the run whose worker is not the one serving their schedule's queue."""
    from django_cadence.models import Attempt

    serving = {system.queue_of(name): name for name in system.worker_names()}
    rows = Attempt.objects.values_list("schedule__queue", "worker")
    return sum(1 for queue, worker in rows if serving.get(queue) != worker)


OURS = {"W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6}
PEER_WORKLOADS = ("W1", "W2", "W3")
