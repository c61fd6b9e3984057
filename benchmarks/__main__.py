"""``python -m benchmarks``: run a workload, or compare django-cadence with its peers.

    python -m benchmarks run W1|W2|W3|W4|W5|W6 [--db sqlite|postgresql|mysql] [--workers N]
                             [--concurrency C] [--quick] [--profile] [--phases]
    python -m benchmarks run W3 --calendars [--db ...] [--quick]
    python -m benchmarks compare W1 W2 W3 [--quick] [--peers apscheduler,procrastinate,...]
    python -m benchmarks peers [--setup]
    python -m benchmarks floor
    python -m benchmarks cron
    python -m benchmarks admin [--db postgresql|mysql|sqlite] [--sizes 10000,1000000] [--repeat N]
    python -m benchmarks recovery [--db postgresql|mysql|sqlite] [--kills 20] [--database NAME]

``run W5`` without ``--db`` runs the whole matrix (1, 2 and 4 workers on PostgreSQL and
MariaDB, 1 on SQLite), each database in its own child process. ``run W6`` runs W1's burst
in one queue, then over 10 queues with one worker each, and prints both with their ratio.
``run W3 --calendars`` puts every schedule of W3 under calendars. ``admin`` times the admin
pages with 10^4 and 10^6 attempts in its own database, ``cadence_bench_admin``
(``CADENCE_BENCH_NAME`` names another). Tables go to stdout, one JSON file per result to
``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from . import harness

DBS = ("postgresql", "mysql", "sqlite")
ADMIN_DB_NAME = "cadence_bench_admin"  # never the other benchmarks' database: they may be running


def _setup_django(db: str, settings: str = "benchmarks.settings") -> None:
    os.environ["CADENCE_BENCH_DB"] = db
    os.environ["DJANGO_SETTINGS_MODULE"] = settings
    import django

    django.setup()


def _run_dir(label: str):
    path = harness.LOGS / f"{harness.utcnow():%Y%m%dT%H%M%SZ}-{label}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _emit(result: dict) -> dict:
    if result["db"] != "postgresql" and result.get("goals"):
        result["notes"].append("the goals are set for PostgreSQL; shown here for reference")
    path = harness.write_result(result)
    print(harness.render(result))
    print(f"-> {path.relative_to(harness.ROOT)}\n", flush=True)
    return result


def run_ours(args) -> list[dict]:
    from .ours import Cadence
    from .workloads import OURS

    workload = OURS[args.workload]
    options = {"calendars": True} if args.calendars else {}
    if args.calendars and args.workload != "W3":
        raise SystemExit("--calendars applies to W3 only")
    if args.workload == "W6" and args.workers:
        raise SystemExit("W6 starts its own workers: one, then one per queue")
    if args.workload == "W5":
        counts = [args.workers] if args.workers else ([1] if args.db == "sqlite" else [1, 2, 4])
    else:
        counts = [args.workers or 1]
    if args.db == "sqlite" and max(counts) > 1:
        raise SystemExit("SQLite runs one worker per database file")
    results = []
    for workers in counts:
        system = Cadence(
            args.db,
            workers=workers,
            concurrency=args.concurrency,
            run_dir=_run_dir(f"{args.workload}-{args.db}-{workers}w"),
            count_queries=args.workload == "W5",
            profile=args.profile,
            phases=args.phases,
        )
        result = workload(system, args.db, quick=args.quick, **options)
        result["logs"] = str(system.run_dir.relative_to(harness.ROOT))
        if args.profile:
            from .profile import summarize

            result["profile"] = summarize(system.run_dir / "w1.pyspy.txt")
            print(result["profile"]["text"])
        if args.phases:
            from .profile import summarize_phases

            names = system.worker_names()
            result["phases"] = summarize_phases([system.phase_file(n) for n in names])
            print(f"phases, summed over the workers; {result['phases']['tries']:,} tries")
            print(harness.table(result["phases"]["rows"]))
        results.append(_emit(result))
    return results


def _w5_matrix(args) -> None:
    """Each database in a child harness (Django settings are per process)."""
    rows = []
    for db in DBS:
        cmd = [sys.executable, "-m", "benchmarks", "run", "W5", "--db", db, "--json-out", "-"]
        if args.concurrency:
            cmd += ["--concurrency", str(args.concurrency)]
        cmd += ["--quick"] if args.quick else []
        print(f"# W5 on {db}", flush=True)
        proc = subprocess.run(cmd, cwd=harness.ROOT, capture_output=True, text=True)
        sys.stdout.write(proc.stdout.split("@@JSON@@")[0])
        if proc.returncode:
            sys.stderr.write(proc.stderr[-3000:])
            rows.append({"db": db, "status": f"failed ({proc.returncode})"})
            continue
        for result in json.loads(proc.stdout.split("@@JSON@@")[1]):
            rows += result["rows"]
    print("== W5 matrix")
    print(harness.table(rows))


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated attempt counts, not {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("give at least one positive attempt count")
    return sizes


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def run_admin(args) -> None:
    os.environ.setdefault("CADENCE_BENCH_NAME", ADMIN_DB_NAME)
    _setup_django(args.db, "benchmarks.admin_settings")
    from . import admin_pages

    result = admin_pages.run(args.db, args.sizes, args.repeat)
    path = harness.write_result(result)
    print(admin_pages.render(result))
    print(f"-> {path.relative_to(harness.ROOT)}\n", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one workload of django-cadence")
    run.add_argument("workload", choices=("W1", "W2", "W3", "W4", "W5", "W6"))
    run.add_argument("--db", choices=DBS, default=None)
    run.add_argument("--workers", type=int, default=None)
    run.add_argument(
        "--concurrency", type=int, default=None, help="default: CADENCE_CONCURRENCY's default"
    )
    run.add_argument("--quick", action="store_true", help="shorter windows (W2/W3 20 s)")
    run.add_argument("--profile", action="store_true", help="py-spy on worker w1")
    run.add_argument("--phases", action="store_true", help="CPU and wall time per engine step")
    run.add_argument(
        "--calendars",
        action="store_true",
        help="W3: every schedule under a weekends and a holidays calendar",
    )
    run.add_argument("--json-out", help=argparse.SUPPRESS)
    cmp = sub.add_parser("compare", help="ours and the peers, back to back")
    cmp.add_argument("workloads", nargs="+", choices=("W1", "W2", "W3"))
    cmp.add_argument("--quick", action="store_true")
    cmp.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="ours: default CADENCE_CONCURRENCY; the peers: 8 threads",
    )
    cmp.add_argument("--peers", default=None, help="comma-separated subset of the peers")
    sub.add_parser("floor", help="W2's floor: its job bodies on bare threads (PostgreSQL)")
    sub.add_parser("cron", help="the cron math per call: never-firing refusals, next instants")
    peers = sub.add_parser("peers", help="list the peers; --setup makes their virtualenvs")
    peers.add_argument("--setup", action="store_true")
    adm = sub.add_parser("admin", help="admin page times with 10^4 and 10^6 attempts")
    adm.add_argument("--db", choices=DBS, default="postgresql")
    adm.add_argument("--sizes", type=_sizes, default=[10_000, 1_000_000], help="attempt counts")
    adm.add_argument("--repeat", type=_positive, default=5, help="timed fetches of each page")
    rec = sub.add_parser("recovery", help="recovery after kill -9, default settings")
    rec.add_argument("--db", choices=DBS, default="postgresql")
    rec.add_argument("--kills", type=_positive, default=20)
    rec.add_argument("--database", default="cadence_recovery", help="made afresh")
    args = parser.parse_args(argv)

    if args.command == "cron":
        from .cron import main as cron

        cron()
    elif args.command == "floor":
        _setup_django("postgresql")
        from .floor import main as floor

        floor()
    elif args.command == "recovery":
        from .recovery import main as recovery

        recovery(["--db", args.db, "--kills", str(args.kills), "--database", args.database])
    elif args.command == "run":
        if args.workload == "W5" and args.db is None:
            _w5_matrix(args)
            return
        args.db = args.db or "postgresql"
        _setup_django(args.db)
        results = run_ours(args)
        if args.json_out == "-":
            print("@@JSON@@" + json.dumps(results, default=str))
    elif args.command == "admin":
        run_admin(args)
    elif args.command == "compare":
        _setup_django("postgresql")
        from .compare import compare

        compare(args)
    else:
        from .peers import PEERS

        for name, peer in PEERS.items():
            line = f"{name:14} {peer.describe()}"
            if args.setup:
                line += f"  venv: {peer.ensure_venv()}"
            print(line)


if __name__ == "__main__":
    main()
