"""The table of every ``CADENCE_*`` setting: its name, its default and the reader of its value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from .declared import calendars_outline, schedules_outline
from .notify import notify_settings
from .readers import (
    boolean,
    duration,
    listen_address,
    optional_port,
    optional_positive_int,
    plan_batch,
    positive_int,
    string_list,
    zero_ok_duration,
    zero_ok_int,
)

# Names whose values are always redacted; CADENCE_SECRET_KEYS adds to them. A name matches
# with ``_``, ``-`` or a space between its parts or none (executors/redaction.py).
DEFAULT_SECRET_KEYS = (
    "password",
    "passwd",
    "passphrase",
    "pass",
    "pwd",
    "secret",
    "token",
    "api_key",
    "access_key",
    "private_key",
    "authorization",
    "auth",
    "credential",
    "cookie",
    "session",
    "signature",
    "dsn",
)


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    parse: Callable[[str, Any], Any]


SETTINGS = {
    s.name: s
    for s in (
        # Executors and payloads.
        Setting("CADENCE_EXECUTORS", (), string_list),
        Setting("CADENCE_PAYLOAD_MAX_BYTES", 65536, positive_int),
        Setting("CADENCE_SECRET_KEYS", (), string_list),
        # Schedule specs.
        Setting("CADENCE_MIN_INTERVAL", timedelta(seconds=1), duration),
        # Misfire.
        Setting("CADENCE_MISFIRE_GRACE", timedelta(seconds=60), zero_ok_duration),
        Setting("CADENCE_MAX_CATCHUP", 100, positive_int),
        # Retries and timeouts (overridable per job and per schedule).
        Setting("CADENCE_MAX_ATTEMPTS", 3, positive_int),
        Setting("CADENCE_RETRY_BASE", timedelta(seconds=10), duration),
        Setting("CADENCE_RETRY_CAP", timedelta(hours=1), duration),
        Setting("CADENCE_MAX_RUNTIME", timedelta(hours=1), duration),
        # Leases and recovery.
        Setting("CADENCE_LEASE", timedelta(seconds=30), duration),
        Setting("CADENCE_RECOVERY_GRACE", timedelta(seconds=5), zero_ok_duration),
        Setting("CADENCE_MAX_RECOVERIES", 3, positive_int),
        Setting("CADENCE_SESSION_LIVENESS", True, boolean),
        # The engine process.
        Setting("CADENCE_CONCURRENCY", None, optional_positive_int),
        Setting("CADENCE_MAX_TICK", timedelta(seconds=10), duration),
        Setting("CADENCE_SHUTDOWN_GRACE", timedelta(seconds=30), zero_ok_duration),
        Setting("CADENCE_PLAN_BATCH", 500, plan_batch),
        Setting("CADENCE_CLAIM_AHEAD", timedelta(seconds=0.5), zero_ok_duration),
        Setting("CADENCE_STUCK_THREADS_LIMIT", 4, zero_ok_int),
        # Schedules as code (reconcile.py) and Django tasks (tasks.py).
        Setting("CADENCE_SCHEDULES", {}, schedules_outline),
        Setting("CADENCE_CALENDARS", {}, calendars_outline),
        Setting("CADENCE_RECONCILE_ON_START", True, boolean),
        Setting("CADENCE_TASKS", (), string_list),
        # Prometheus metrics (metrics.py), off unless asked for.
        Setting("CADENCE_METRICS", False, boolean),
        Setting("CADENCE_METRICS_PORT", None, optional_port),
        Setting("CADENCE_METRICS_ADDRESS", "127.0.0.1", listen_address),
        # Notifications (notify/), off unless channels are configured.
        Setting("CADENCE_NOTIFY", {}, notify_settings),
    )
}


def setting_names() -> tuple[str, ...]:
    """The names of every setting django-cadence reads."""
    return tuple(SETTINGS)


def setting_default(name: str) -> Any:
    """The default of one setting, as documented in the README."""
    return SETTINGS[name].default


def validate_all() -> list[ImproperlyConfigured]:
    """Parse every configured setting; return the problems instead of raising the first."""
    problems = []
    for name, setting in SETTINGS.items():
        if hasattr(django_settings, name):
            try:
                setting.parse(name, getattr(django_settings, name))
            except ImproperlyConfigured as exc:
                problems.append(exc)
    return problems
