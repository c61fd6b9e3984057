"""The engine behind ``run_cadence``: plan due schedules, claim attempts, run tries, recover.

``Engine`` is public for projects that embed it (docs/reference/api.md). It is imported
lazily, so a child process can import this package's modules before Django is set up.
"""

from typing import Any

__all__ = ["Engine"]


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from .loop import Engine

        return Engine
    raise AttributeError(f"module 'django_cadence.engine' has no attribute {name!r}")
