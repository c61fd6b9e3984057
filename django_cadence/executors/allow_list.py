"""The allow-list: which executor paths may run, and the callables behind them.

A schedule's executor is a dotted path that anyone with edit rights on a schedule can type,
so the allow-list is checked on the *string* before anything is imported: importing a module
runs its top-level code, and ``import_string("os.system")`` alone would already hand out a
way to run arbitrary commands. Only a path that is registered with ``@job`` or matches a
``CADENCE_EXECUTORS`` pattern is ever imported, and the check runs again on every
``resolve()``, so a path removed from the settings stops running even if it was imported.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..conf import cadence_settings
from ..exceptions import ExecutorNotAllowed, ExecutorNotFound
from . import calling, discovery, registry
from .paths import is_dotted_path, matches_prefix

_imported: dict[str, Callable[..., Any]] = {}


def is_allowed(path: object) -> bool:
    """Whether ``path`` may run: a plain dotted path, registered or matching a pattern."""
    if not isinstance(path, str) or not is_dotted_path(path):
        return False
    return (
        registry.registered_function(path) is not None
        or path in cadence_settings.EXECUTORS
        or matches_prefix(path)
    )


def check_allowed(path: object) -> None:
    """Raise ``ExecutorNotAllowed`` unless ``path`` may run; never imports anything."""
    shown = repr(path)[:120]
    if not is_dotted_path(path):
        raise ExecutorNotAllowed(
            f"Executor {shown} is not allowed: it must be a dotted path of Python identifiers "
            "such as 'myapp.jobs.send', registered with @job or listed in CADENCE_EXECUTORS."
        )
    if not is_allowed(path):
        raise ExecutorNotAllowed(not_allowed_message(str(path)))


def not_allowed_message(path: str) -> str:
    """Why ``path`` may not run: that it does not exist, when its module is loaded and lacks
    the name (allowing it would not help); else where jobs are looked for, the ways to allow
    it, and the nearest allowed path."""
    missing = missing_message(path)
    if missing is not None:
        return missing
    module, name = path.rsplit(".", 1)
    same_name = sorted(p for p in registry.registered_jobs() if p.rsplit(".", 1)[1] == name)
    found = (
        f" A function of that name is registered as {same_name[0]!r} (@job registers a "
        "function under the module that defines it): use that path."
        if same_name
        else _did_you_mean(path)
    )
    return (
        f"Executor {path!r} is not allowed: no @job registered that path and no "
        "CADENCE_EXECUTORS entry matches it. @job functions are found by importing each "
        f"installed app's jobs.py, and register under the module that defines them.{found} "
        f"To allow it: move the function into an app's jobs.py, import {module!r} from one, "
        f"or add {path!r} (or '{module}.*') to CADENCE_EXECUTORS."
    )


def missing_message(path: str) -> str | None:
    """ "``path`` does not exist", when that is known without importing anything: its module
    is already loaded and its namespace lacks the name (a module with ``__getattr__`` may
    make names up, so it is not judged). None otherwise."""
    module_path, name = path.rsplit(".", 1)
    module = sys.modules.get(module_path)
    if not isinstance(module, ModuleType):
        return None
    namespace = vars(module)
    if name in namespace or "__getattr__" in namespace:
        return None
    return _does_not_exist(path)


def _does_not_exist(path: str) -> str:
    module_path, name = path.rsplit(".", 1)
    return (
        f"Executor {path!r} does not exist: the module {module_path!r} has no {name!r}."
        f"{_did_you_mean(path)}"
    )


def _did_you_mean(path: str) -> str:
    nearest = discovery.close_to(path)
    return f" Did you mean {nearest[0]!r}?" if nearest else ""


def resolve(path: str) -> Callable[..., Any]:
    """The callable behind an allowed path; the allow-list is checked on every call."""
    check_allowed(path)
    registered = registry.registered_function(path)
    if registered is not None:
        return registered
    func = _imported.get(path)
    if func is None:
        func = _import(path)
        _imported[path] = func
    if path not in cadence_settings.EXECUTORS and not discovery.defined_under_a_pattern(func):
        # ``from subprocess import run`` in myapp/jobs.py must not make myapp.jobs.run
        # runnable through "myapp.jobs.*"; an exact pattern or @job may still name it.
        raise ExecutorNotAllowed(
            f"Executor {path!r} is not allowed: it is defined in "
            f"{discovery.defining_module(func)!r}, outside the "
            "CADENCE_EXECUTORS pattern it matches. List its exact path or register it with @job."
        )
    return func


def _import(path: str) -> Callable[..., Any]:
    module_path, name = path.rsplit(".", 1)
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        raise ExecutorNotFound(
            f"Executor {path!r}: cannot import {module_path!r} ({exc})."
        ) from exc
    try:
        func = getattr(module, name)
    except AttributeError:
        raise ExecutorNotFound(_does_not_exist(path)) from None
    if not discovery.runs(func):
        raise ExecutorNotFound(
            f"Executor {path!r} names a {type(func).__name__}, not a function or callable object."
        )
    return func


def job_options(path: str) -> registry.JobOptions:
    """The registered options of an allowed path, or the defaults for a pattern-allowed one.

    An unregistered path's module is imported first, so its ``@job`` has run even in a fresh
    worker that recovers an ``at_most_once`` attempt before anything else imported it.
    """
    check_allowed(path)
    options = registry.registered_options(path)
    if options is None:
        with contextlib.suppress(ExecutorNotFound):
            resolve(path)
        options = registry.registered_options(path)
    return options or registry.JobOptions(path=path)


def clear_cache() -> None:
    """Forget imported executors (registrations stay)."""
    _imported.clear()
    calling.clear_cache()
