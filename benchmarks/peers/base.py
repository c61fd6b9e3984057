"""Peers on the harness side: a virtualenv each, and a runner script started in it.

A peer's runner (``run_<peer>.py``, executed by the peer's own interpreter) reads a config
file (the workload spec, the DSN, concurrency, a lead), creates the spec's jobs with the
peer's own API, picks ``t0`` once its slow setup is done, starts the scheduler, writes a
ready file ``{"t0": ...}`` and runs until SIGTERM. Its job writes the same ``bench_firing``
row as ours: the local clock first, then one INSERT. The harness measures CPU over the
runner's whole process tree and reads the lags from ``bench_firing``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import harness

VENVS = harness.BENCH / ".venvs"
PEERS_DIR = Path(__file__).resolve().parent
DSN = "host=127.0.0.1 port=5432 user=postgres dbname=cadence_bench"


class NotSupported(Exception):
    """The peer cannot express this workload (said in the result, not faked)."""


class Peer:
    name = ""
    requirements: tuple[str, ...] = ()
    script = ""
    implemented = True
    unsupported: dict[str, str] = {}  # workload -> why the peer cannot express it
    setup_timeout = 900.0
    extra_lead = 0.0  # seconds the runner needs after picking t0 (starting its processes)
    control = False  # a control (no scheduler), not a peer: never the best peer

    def __init__(self, *, run_dir: Path, concurrency: int = 8) -> None:
        self.run_dir = run_dir
        self.concurrency = concurrency
        self.workers = 1
        self.proc = None

    @classmethod
    def describe(cls) -> str:
        doc = (sys.modules[cls.__module__].__doc__ or "").strip().splitlines()
        state = "" if cls.implemented else " [not implemented]"
        return (doc[0] if doc else cls.name) + state

    # --- virtualenv --------------------------------------------------------------------------

    @classmethod
    def venv(cls) -> Path:
        return VENVS / cls.name

    @classmethod
    def python(cls) -> Path:
        return cls.venv() / "bin" / "python"

    @classmethod
    def ensure_venv(cls) -> Path:
        """Create the peer's virtualenv under ``benchmarks/.venvs/`` once per requirement set."""
        stamp = cls.venv() / ".bench-requirements"
        wanted = hashlib.sha256("\n".join(cls.requirements).encode()).hexdigest()
        if stamp.exists() and stamp.read_text() == wanted and cls.python().exists():
            return cls.venv()
        VENVS.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(cls.venv())], check=True)
        subprocess.run(
            [str(cls.python()), "-m", "pip", "install", "--quiet", *cls.requirements], check=True
        )
        stamp.write_text(wanted)
        return cls.venv()

    # --- one run ----------------------------------------------------------------------------

    def start(self, spec: dict[str, Any], lead: float) -> datetime:
        self.ensure_venv()
        reason = self.unsupported.get(spec["workload"])
        if reason:
            raise NotSupported(reason)
        ready = self.run_dir / f"{self.name}.ready.json"
        ready.unlink(missing_ok=True)
        config = {
            "spec": spec,
            "lead": lead + self.extra_lead,
            "dsn": DSN,
            "concurrency": self.concurrency,
            "ready": str(ready),
            "run_dir": str(self.run_dir),
        }
        config_path = self.run_dir / f"{self.name}.config.json"
        config_path.write_text(json.dumps(config))
        log = self.run_dir / f"{self.name}.log"
        self.proc = harness.spawn(
            [str(self.python()), str(PEERS_DIR / self.script), str(config_path)],
            env={"CADENCE_BENCH_WORKER": self.name},
            log=log,
        )
        deadline = time.monotonic() + self.setup_timeout
        while not ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} runner exited {self.proc.returncode}; see {log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} runner not ready in {self.setup_timeout} s")
            time.sleep(0.1)
        return datetime.fromisoformat(json.loads(ready.read_text())["t0"])

    def cpu(self) -> float:
        return harness.tree_cpu([self.proc.pid]) if self.proc else 0.0

    def stop(self) -> None:
        if self.proc is not None:
            harness.stop(self.proc, grace=20)
