"""Executor paths as strings: which are well-formed dotted paths, and which match the
``CADENCE_EXECUTORS`` patterns. Pure string matching: nothing is imported here.

Both checks run for every try (claim, run, recovery), so their answers are cached: they
depend only on the path and on the patterns, and the patterns are part of the key.
"""

from __future__ import annotations

import functools
import keyword
import re

from ..conf import cadence_settings

MAX_PATH_LENGTH = 255  # Schedule.executor's max_length

_PATH_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def is_dotted_path(path: object) -> bool:
    return isinstance(path, str) and _is_dotted_str(path)


@functools.lru_cache(maxsize=4096)
def _is_dotted_str(path: str) -> bool:
    if len(path) > MAX_PATH_LENGTH or not _PATH_RE.fullmatch(path):
        return False
    return not any(part.startswith("__") or keyword.iskeyword(part) for part in path.split("."))


def matches_prefix(path: str) -> bool:
    """``prefix.*`` matches every path strictly below ``prefix``, never ``prefix`` itself."""
    return _matches_prefix_of(path, cadence_settings.EXECUTORS)


@functools.lru_cache(maxsize=4096)
def _matches_prefix_of(path: str, patterns: tuple[str, ...]) -> bool:
    return any(
        pattern.endswith(".*")
        and is_dotted_path(f"{pattern[:-2]}.x")
        and path.startswith(pattern[:-1])
        for pattern in patterns
    )


def invalid_patterns() -> list[str]:
    """The CADENCE_EXECUTORS entries that can never match (for a system check)."""
    return [
        p
        for p in cadence_settings.EXECUTORS
        if not is_dotted_path(f"{p[:-2]}.x" if p.endswith(".*") else p)
    ]
