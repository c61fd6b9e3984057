"""Count the SQL statements a ``run_cadence`` worker sends, from outside the engine.

Every new connection gets an ``execute_wrapper`` (Django's hook for exactly this), so the
engine's own connection and the job threads' connections are all counted, per statement
kind. The counts are written as JSON to the file given in ``CADENCE_BENCH_COUNT_QUERIES``:
one line each time the process gets SIGUSR1 (the harness takes snapshots around the measured
window) and one at exit. BEGIN/COMMIT issued by the driver are not statements here.
"""

from __future__ import annotations

import atexit
import json
import signal
import threading
import time
from collections import Counter

from django.db.backends.signals import connection_created

_lock = threading.RLock()  # re-entrant: the SIGUSR1 snapshot may interrupt _wrapper
_counts: Counter[str] = Counter()
_path = ""


def _wrapper(execute, sql, params, many, context):
    kind = " ".join(sql.split())[:60]
    with _lock:
        _counts[kind] += 1
    return execute(sql, params, many, context)


def _on_connection(sender, connection, **kwargs) -> None:
    if _wrapper not in connection.execute_wrappers:
        connection.execute_wrappers.append(_wrapper)


def snapshot(label: str) -> None:
    with _lock:
        counts = dict(_counts)
    line = {"label": label, "t": time.time(), "total": sum(counts.values()), "by_kind": counts}
    with open(_path, "a") as f:
        f.write(json.dumps(line) + "\n")


def install(path: str) -> None:
    global _path
    _path = path
    connection_created.connect(_on_connection, dispatch_uid="cadence-bench-querycount")
    atexit.register(snapshot, "exit")
    signal.signal(signal.SIGUSR1, lambda signum, frame: snapshot("usr1"))
