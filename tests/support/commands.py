"""Commands as a user runs them: a fresh interpreter from the repository root, its output
captured, never raising on a failed exit (the test asserts the code)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_python(
    *args: str,
    env: Mapping[str, str] | None = None,
    unset: Iterable[str] = (),
    timeout: float = 120,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``cwd`` with this environment plus ``env``, less the variables
    ``unset``."""
    child_env = {**os.environ, **(env or {})}
    for name in unset:
        child_env.pop(name, None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_django(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m django ARGS``: a management command (``--settings`` or
    ``DJANGO_SETTINGS_MODULE`` in ``env`` says which project)."""
    return run_python("-m", "django", *args, env=env, timeout=timeout)
