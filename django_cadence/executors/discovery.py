"""What the ``CADENCE_EXECUTORS`` entries name: the callables each offers, and the entries
that name nothing.

Only modules the settings name are imported here: the module a pattern names
(``"orders.tasks.*"`` names ``orders.tasks``) and the module of an exact entry. Their callables
are read from the module's own namespace, one level deep (no attribute walks), and kept only
if the allow-list would run them: public, not a class, and defined in a module under a pattern
(``allow_list.resolve``'s rule). The admin offers them; ``manage.py check`` warns of entries
that can never match; a refusal suggests the nearest allowed path.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..conf import cadence_settings
from . import registry
from .paths import is_dotted_path, matches_prefix

# A pattern over a package (``"orders.*"``) offers what ``orders`` itself defines, not what its
# submodules do: importing every submodule would run code the settings never named.


def defining_module(func: Any) -> object:
    """The module that defines ``func``. A Celery task made by ``@app.task`` before its app
    was finalized is a lazy proxy whose class is Celery's (``celery.local``): the task it
    stands for names the module of the function it wraps."""
    if type(func).__module__ == "celery.local":
        with contextlib.suppress(Exception):
            func = func._get_current_object()
    return getattr(func, "__module__", None)


def defined_under_a_pattern(func: Any) -> bool:
    """Whether a pattern covers the module that defines ``func`` (what a pattern may run)."""
    module = defining_module(func)
    return isinstance(module, str) and matches_prefix(f"{module}.x")


def runs(func: object) -> bool:
    """A function or callable object, not a class (``allow_list`` refuses classes)."""
    return callable(func) and not inspect.isclass(func)


def pattern_module(pattern: str) -> str | None:
    """The module a well-formed ``prefix.*`` pattern names; None for an exact entry."""
    if not pattern.endswith(".*"):
        return None
    module = pattern[:-2]
    return module if is_dotted_path(f"{module}.x") else None


def _load(module_path: str) -> ModuleType:
    """Import a module the settings name; any failure is the module's (``ImportError``)."""
    try:
        return importlib.import_module(module_path)
    except ImportError:
        raise
    except Exception as exc:  # its top-level code raised: it cannot be imported either
        raise ImportError(f"{type(exc).__name__}: {exc}") from exc


def offered_by(pattern: str) -> list[str]:
    """The paths ``pattern`` lets run in the module it names, sorted; [] if it names none or
    the module cannot be imported (``manage.py check`` says why)."""
    module_path = pattern_module(pattern)
    if module_path is None:
        return []
    try:
        module = _load(module_path)
    except ImportError:
        return []
    return sorted(
        f"{module_path}.{name}"
        for name, value in list(vars(module).items())
        if not name.startswith("_")
        and is_dotted_path(f"{module_path}.{name}")
        and runs(value)
        and defined_under_a_pattern(value)
    )


def exact_entry_runs(path: str) -> bool:
    """Whether an exact ``CADENCE_EXECUTORS`` entry names a callable that exists."""
    return is_dotted_path(path) and entry_problem(path) is None


def allowed_paths() -> list[str]:
    """Every path the allow-list would run that can be listed: registered, exact entries,
    and those the patterns offer."""
    found = set(registry.registered_jobs())
    for entry in cadence_settings.EXECUTORS:
        if pattern_module(entry) is not None:
            found.update(offered_by(entry))
        elif is_dotted_path(entry):
            found.add(entry)
    return sorted(found)


def close_to(path: str, candidates: list[str] | None = None) -> list[str]:
    """The allowed paths nearest to ``path`` (a typo's likely meaning), best first."""
    pool = allowed_paths() if candidates is None else candidates
    return difflib.get_close_matches(path, [p for p in pool if p != path], n=3, cutoff=0.8)


@dataclass(frozen=True)
class EntryProblem:
    """Why a ``CADENCE_EXECUTORS`` entry can never match, for ``manage.py check``."""

    entry: str
    missing_module: bool  # its module cannot be imported (W003); else its name is wrong (W004)
    message: str
    hint: str


def entry_problem(entry: str) -> EntryProblem | None:
    """What is wrong with one well-formed entry, or None when it names something real."""
    module_path = pattern_module(entry)
    is_pattern = module_path is not None
    if module_path is None:
        module_path = entry.rsplit(".", 1)[0]
    try:
        module = _load(module_path)
    except ImportError as exc:
        meant = _meant_module(entry, module_path, is_pattern)
        return EntryProblem(
            entry,
            True,
            f"CADENCE_EXECUTORS entry {entry!r} names the module {module_path!r}, which cannot "
            f"be imported ({exc}): it can never match an executor.",
            f"Did you mean {meant!r}?"
            if meant
            else "Correct the module path, or remove the entry.",
        )
    if is_pattern:
        return None
    name = entry.rsplit(".", 1)[1]
    namespace = vars(module)
    if name not in namespace and "__getattr__" not in namespace:
        nearest_names = close_to(entry, [f"{module_path}.{n}" for n in namespace])
        hint = (
            f"Did you mean {nearest_names[0]!r}?"
            if nearest_names
            else "Correct the name, or remove the entry."
        )
        return EntryProblem(
            entry,
            False,
            f"CADENCE_EXECUTORS entry {entry!r} names nothing: the module {module_path!r} has "
            f"no {name!r}.",
            hint,
        )
    value = namespace.get(name)
    if name in namespace and not runs(value):
        return EntryProblem(
            entry,
            False,
            f"CADENCE_EXECUTORS entry {entry!r} names a {_kind(value)}, not a function or "
            "callable object: it can never run.",
            "Name a function, or remove the entry.",
        )
    return None


def entry_problems() -> list[EntryProblem]:
    """The well-formed entries that can never match (W002 names the malformed ones)."""
    problems = []
    for entry in cadence_settings.EXECUTORS:
        if pattern_module(entry) is not None or is_dotted_path(entry):
            problem = entry_problem(entry)
            if problem is not None:
                problems.append(problem)
    return problems


def _kind(value: object) -> str:
    return "class" if inspect.isclass(value) else type(value).__name__


def _meant_module(entry: str, module_path: str, is_pattern: bool) -> str | None:
    """The entry with its module replaced by the loaded module of the nearest name (a typo's
    likely meaning), if that names something: for an exact entry, a callable it defines."""
    loaded = {
        name: module
        for name, module in list(sys.modules.items())
        if isinstance(module, ModuleType) and is_dotted_path(f"{name}.x")
    }
    found = difflib.get_close_matches(module_path, list(loaded), n=1, cutoff=0.8)
    if not found:
        return None
    if is_pattern:
        return f"{found[0]}.*"
    name = entry.rsplit(".", 1)[1]
    return f"{found[0]}.{name}" if runs(vars(loaded[found[0]]).get(name)) else None
