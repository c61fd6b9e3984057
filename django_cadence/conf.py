"""Every ``CADENCE_*`` setting, its default and its accepted values, in one place.

Each setting is parsed once and cached; Django's ``setting_changed`` signal (sent by
``override_settings`` and pytest-django's ``settings`` fixture) drops the cache, so tests
that change a setting see the new value. The engine reads settings on every try: parsing
them each time was a measurable part of its cost. A malformed value raises
``ImproperlyConfigured`` naming the setting and what it accepts; the system checks call
:func:`validate_all` so the same message shows at start-up.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

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


def _duration(name: str, value: Any, *, allow_zero: bool = False) -> timedelta:
    """Accept a ``timedelta`` or a number of seconds; refuse negatives (and zero unless allowed)."""
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise ImproperlyConfigured(
            f"{name} must be a datetime.timedelta or a number of seconds, not {value!r}."
        )
    delta = value if isinstance(value, timedelta) else timedelta(seconds=value)
    if delta < timedelta(0) or (delta == timedelta(0) and not allow_zero):
        accepted = "zero or more" if allow_zero else "more than zero"
        raise ImproperlyConfigured(f"{name} must be {accepted} seconds, not {value!r}.")
    return delta


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(f"{name} must be an integer of 1 or more, not {value!r}.")
    return value


def _plan_batch(name: str, value: Any) -> int:
    """1 to 10,000: one batch's schedule ids go into one statement's ``IN`` list, and
    SQLite takes at most 32,766 parameters in a statement."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
        raise ImproperlyConfigured(f"{name} must be an integer from 1 to 10000, not {value!r}.")
    return value


def _zero_ok_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ImproperlyConfigured(f"{name} must be an integer of 0 or more, not {value!r}.")
    return value


def _string_list(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise ImproperlyConfigured(f"{name} must be a list of strings, not {value!r}.")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise ImproperlyConfigured(f"{name} must contain only non-empty strings, not {value!r}.")
    return tuple(value)


@dataclass(frozen=True)
class _Setting:
    name: str
    default: Any
    parse: Callable[[str, Any], Any]


def _zero_ok_duration(name: str, value: Any) -> timedelta:
    return _duration(name, value, allow_zero=True)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ImproperlyConfigured(f"{name} must be True or False, not {value!r}.")
    return value


def _optional_positive_int(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(
            f"{name} must be None or an integer of 1 or more, not {value!r}."
        )
    return value


def _optional_port(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ImproperlyConfigured(f"{name} must be None or a TCP port (1-65535), not {value!r}.")
    return value


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _listen_address(name: str, value: Any) -> str:
    """An IPv4 or IPv6 address, or a host name (RFC 1123 labels), that a socket can bind."""
    if isinstance(value, str):
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            labels = value.removesuffix(".").split(".")
            if len(value) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels):
                return value
    raise ImproperlyConfigured(
        f"{name} must be an IP address or a host name to listen on, such as '127.0.0.1' (this "
        f"machine only), '0.0.0.0' or '::' (every interface), not {value!r}."
    )


def _schedules(name: str, value: Any) -> dict[str, dict[str, Any]]:
    """The outline only (names to dicts of fields); ``declarations`` checks each field."""
    if not isinstance(value, dict):
        raise ImproperlyConfigured(
            f"{name} must be a dict of schedule name to a dict of fields, "
            f"not {type(value).__name__}."
        )
    for key, entry in value.items():
        if not isinstance(key, str) or not key.strip():
            raise ImproperlyConfigured(
                f"{name} keys must be non-empty schedule names, not {key!r}."
            )
        if not isinstance(entry, dict):
            raise ImproperlyConfigured(
                f"{name}[{key!r}] must be a dict of fields, not {type(entry).__name__}."
            )
    return value


# What CADENCE_NOTIFY tells of (models/notice.py ``Event``), and the kinds of channel.
NOTIFY_EVENTS = (
    "dead_letter",
    "failing",
    "overdue",
    "paused",
    "no_worker",
    "worker_unhealthy",
    "unserved_queue",
)
CHANNEL_TYPES = ("mail", "webhook", "sentry", "callable")
_CHANNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_CHANNEL_KEYS = {
    "mail": {"to"},
    "webhook": {"url", "secret", "timeout"},
    "sentry": {"margin"},
    "callable": {"path"},
}
_COMMON_KEYS = {"type", "events", "metadata", "tries"}


@dataclass(frozen=True)
class Channel:
    """One entry of ``CADENCE_NOTIFY["channels"]``, checked."""

    name: str
    type: str
    events: tuple[str, ...] = NOTIFY_EVENTS  # the events it takes
    metadata: tuple[tuple[str, tuple[str, ...]], ...] = ()  # schedule metadata it must match
    tries: int = 8  # sends before a message counts as failed
    to: tuple[str, ...] = ()  # mail: empty for ADMINS
    url: str = ""
    secret: str = field(default="", repr=False)  # never in a log line or an error
    timeout: float = 10.0
    margin: int = 1  # sentry: minutes a check-in may be late
    path: str = ""


@dataclass(frozen=True)
class NotifySettings:
    channels: tuple[Channel, ...] = ()
    failures: int = 3  # failed tries in a row that open a "failing" episode

    def channel(self, name: str) -> Channel | None:
        return next((c for c in self.channels if c.name == name), None)


def _calendars(name: str, value: Any) -> dict[str, dict[str, Any]]:
    """Calendar name -> {"timezone", "mode", "base", "rules", "description"}: the outline;
    ``cadence_sync`` checks the rules and names the bad one (ops/calendar_sync.py)."""
    outline = _schedules(name, value)
    keys = {"timezone", "mode", "base", "rules", "description"}
    for key, entry in outline.items():
        unknown = sorted(set(entry) - keys)
        if unknown:
            raise ImproperlyConfigured(
                f"{name}[{key!r}]: unknown field {unknown[0]!r}; use {', '.join(sorted(keys))}."
            )
        base = entry.get("base")
        if base is not None and not isinstance(base, str):
            raise ImproperlyConfigured(f"{name}[{key!r}]['base'] must be a calendar name.")
    return outline


def _notify(name: str, value: Any) -> NotifySettings:
    """``{"channels": {name: {"type": ..., ...}}, "failures": 3}``, every key checked."""
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f'{name} must be a dict such as {{"channels": {{...}}}}.')
    unknown = set(value) - {"channels", "failures"}
    if unknown:
        raise ImproperlyConfigured(
            f"{name} has unknown keys {sorted(unknown)}: it takes channels and failures."
        )
    failures = _positive_int(f'{name}["failures"]', value.get("failures", 3))
    raw = value.get("channels", {})
    if not isinstance(raw, dict):
        raise ImproperlyConfigured(f'{name}["channels"] must be a dict of name to channel.')
    channels = tuple(_channel(f'{name}["channels"][{key!r}]', key, raw[key]) for key in raw)
    return NotifySettings(channels=channels, failures=failures)


def _channel(where: str, key: Any, entry: Any) -> Channel:
    if not isinstance(key, str) or not _CHANNEL_NAME.fullmatch(key):
        raise ImproperlyConfigured(
            f"{where}: a channel's name is letters, digits, '.', '_' or '-' (at most 100)."
        )
    if not isinstance(entry, dict) or entry.get("type") not in CHANNEL_TYPES:
        raise ImproperlyConfigured(f'{where} must be a dict with "type" one of {CHANNEL_TYPES}.')
    kind = entry["type"]
    unknown = set(entry) - _COMMON_KEYS - _CHANNEL_KEYS[kind]
    if unknown:
        allowed = sorted(_COMMON_KEYS | _CHANNEL_KEYS[kind])
        raise ImproperlyConfigured(f"{where} has unknown keys {sorted(unknown)}: {allowed}.")
    options: dict[str, Any] = {"name": key, "type": kind}
    if "events" in entry:
        events = _string_list(f'{where}["events"]', entry["events"])
        wrong = [e for e in events if e not in NOTIFY_EVENTS]
        if wrong:
            raise ImproperlyConfigured(f'{where}["events"]: {wrong} are not among {NOTIFY_EVENTS}.')
        options["events"] = events
    if "metadata" in entry:
        options["metadata"] = _metadata_filter(f'{where}["metadata"]', entry["metadata"])
    if "tries" in entry:
        options["tries"] = _positive_int(f'{where}["tries"]', entry["tries"])
    options.update(_channel_options(where, kind, entry))
    return Channel(**options)


def _metadata_filter(where: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{"team": "billing"}`` or ``{"team": ["billing", "data"]}``."""
    if not isinstance(value, dict) or not value:
        raise ImproperlyConfigured(f'{where} must be a dict such as {{"team": "billing"}}.')
    pairs = []
    for label, wanted in value.items():
        values = (wanted,) if isinstance(wanted, str) else wanted
        if not isinstance(label, str) or not isinstance(values, list | tuple) or not values:
            raise ImproperlyConfigured(f"{where}[{label!r}] must be a string or a list of them.")
        if not all(isinstance(v, str) for v in values):
            raise ImproperlyConfigured(f"{where}[{label!r}] must be a string or a list of them.")
        pairs.append((label, tuple(values)))
    return tuple(pairs)


def _channel_options(where: str, kind: str, entry: dict[str, Any]) -> dict[str, Any]:
    if kind == "mail":
        return {"to": _string_list(f'{where}["to"]', entry["to"])} if "to" in entry else {}
    if kind == "webhook":
        url, secret = entry.get("url"), entry.get("secret")
        if not isinstance(url, str) or not re.match(r"https?://[^\s/]+", url):
            raise ImproperlyConfigured(f'{where}["url"] must be an http:// or https:// URL.')
        if not isinstance(secret, str) or len(secret) < 16:
            raise ImproperlyConfigured(
                f'{where}["secret"] must be a string of 16 characters or more, shared with '
                "the receiver, which checks the signature with it."
            )
        timeout = _duration(f'{where}["timeout"]', entry.get("timeout", 10)).total_seconds()
        return {"url": url, "secret": secret, "timeout": timeout}
    if kind == "sentry":
        return {"margin": _positive_int(f'{where}["margin"]', entry.get("margin", 1))}
    path = entry.get("path")
    if not isinstance(path, str) or not re.fullmatch(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*", path):
        raise ImproperlyConfigured(
            f'{where}["path"] must be the dotted path of a function, such as '
            '"myproject.alerts.to_slack".'
        )
    return {"path": path}


_SETTINGS = {
    s.name: s
    for s in (
        # Executors and payloads.
        _Setting("CADENCE_EXECUTORS", (), _string_list),
        _Setting("CADENCE_PAYLOAD_MAX_BYTES", 65536, _positive_int),
        _Setting("CADENCE_SECRET_KEYS", (), _string_list),
        # Schedule specs.
        _Setting("CADENCE_MIN_INTERVAL", timedelta(seconds=1), _duration),
        # Misfire.
        _Setting("CADENCE_MISFIRE_GRACE", timedelta(seconds=60), _zero_ok_duration),
        _Setting("CADENCE_MAX_CATCHUP", 100, _positive_int),
        # Retries and timeouts (overridable per job and per schedule).
        _Setting("CADENCE_MAX_ATTEMPTS", 3, _positive_int),
        _Setting("CADENCE_RETRY_BASE", timedelta(seconds=10), _duration),
        _Setting("CADENCE_RETRY_CAP", timedelta(hours=1), _duration),
        _Setting("CADENCE_MAX_RUNTIME", timedelta(hours=1), _duration),
        # Leases and recovery.
        _Setting("CADENCE_LEASE", timedelta(seconds=30), _duration),
        _Setting("CADENCE_RECOVERY_GRACE", timedelta(seconds=5), _zero_ok_duration),
        _Setting("CADENCE_MAX_RECOVERIES", 3, _positive_int),
        _Setting("CADENCE_SESSION_LIVENESS", True, _bool),
        # The engine process.
        _Setting("CADENCE_CONCURRENCY", None, _optional_positive_int),
        _Setting("CADENCE_MAX_TICK", timedelta(seconds=10), _duration),
        _Setting("CADENCE_SHUTDOWN_GRACE", timedelta(seconds=30), _zero_ok_duration),
        _Setting("CADENCE_PLAN_BATCH", 500, _plan_batch),
        _Setting("CADENCE_CLAIM_AHEAD", timedelta(seconds=0.5), _zero_ok_duration),
        _Setting("CADENCE_STUCK_THREADS_LIMIT", 4, _zero_ok_int),
        # Schedules as code (reconcile.py) and Django tasks (tasks.py).
        _Setting("CADENCE_SCHEDULES", {}, _schedules),
        _Setting("CADENCE_CALENDARS", {}, _calendars),
        _Setting("CADENCE_RECONCILE_ON_START", True, _bool),
        _Setting("CADENCE_TASKS", (), _string_list),
        # Prometheus metrics (metrics.py), off unless asked for.
        _Setting("CADENCE_METRICS", False, _bool),
        _Setting("CADENCE_METRICS_PORT", None, _optional_port),
        _Setting("CADENCE_METRICS_ADDRESS", "127.0.0.1", _listen_address),
        # Notifications (notify/), off unless channels are configured.
        _Setting("CADENCE_NOTIFY", {}, _notify),
    )
}


class CadenceSettings:
    """Typed access to the ``CADENCE_*`` settings; one property per setting."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def _get(self, name: str) -> Any:
        try:
            return self._cache[name]
        except KeyError:
            pass
        setting = _SETTINGS[name]
        value = setting.parse(name, getattr(django_settings, name, setting.default))
        self._cache[name] = value
        return value

    def clear_cache(self) -> None:
        self._cache.clear()

    @property
    def EXECUTORS(self) -> tuple[str, ...]:  # noqa: N802 - mirrors the setting name
        return self._get("CADENCE_EXECUTORS")

    @property
    def PAYLOAD_MAX_BYTES(self) -> int:  # noqa: N802
        return self._get("CADENCE_PAYLOAD_MAX_BYTES")

    @property
    def SECRET_KEYS(self) -> tuple[str, ...]:  # noqa: N802
        """The built-in names and those of ``CADENCE_SECRET_KEYS``, lower-cased, once each
        (cached with the settings: every log line asks)."""
        merged = self._cache.get("SECRET_KEYS")
        if merged is None:
            names = (*DEFAULT_SECRET_KEYS, *self._get("CADENCE_SECRET_KEYS"))
            merged = tuple(dict.fromkeys(name.strip().lower() for name in names))
            self._cache["SECRET_KEYS"] = merged
        return merged

    @property
    def MIN_INTERVAL(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MIN_INTERVAL")

    @property
    def MISFIRE_GRACE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MISFIRE_GRACE")

    @property
    def MAX_CATCHUP(self) -> int:  # noqa: N802
        return self._get("CADENCE_MAX_CATCHUP")

    @property
    def MAX_ATTEMPTS(self) -> int:  # noqa: N802
        return self._get("CADENCE_MAX_ATTEMPTS")

    @property
    def RETRY_BASE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_RETRY_BASE")

    @property
    def RETRY_CAP(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_RETRY_CAP")

    @property
    def MAX_RUNTIME(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MAX_RUNTIME")

    @property
    def LEASE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_LEASE")

    @property
    def RECOVERY_GRACE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_RECOVERY_GRACE")

    @property
    def MAX_RECOVERIES(self) -> int:  # noqa: N802
        return self._get("CADENCE_MAX_RECOVERIES")

    @property
    def SESSION_LIVENESS(self) -> bool:  # noqa: N802
        return self._get("CADENCE_SESSION_LIVENESS")

    @property
    def CONCURRENCY(self) -> int | None:  # noqa: N802
        """None: the database's default (``Store.default_concurrency``)."""
        return self._get("CADENCE_CONCURRENCY")

    @property
    def MAX_TICK(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MAX_TICK")

    @property
    def SHUTDOWN_GRACE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_SHUTDOWN_GRACE")

    @property
    def PLAN_BATCH(self) -> int:  # noqa: N802
        return self._get("CADENCE_PLAN_BATCH")

    @property
    def CLAIM_AHEAD(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_CLAIM_AHEAD")

    @property
    def STUCK_THREADS_LIMIT(self) -> int:  # noqa: N802
        return self._get("CADENCE_STUCK_THREADS_LIMIT")

    @property
    def SCHEDULES(self) -> dict[str, Any]:  # noqa: N802
        return self._get("CADENCE_SCHEDULES")

    @property
    def CALENDARS(self) -> dict[str, Any]:  # noqa: N802
        return self._get("CADENCE_CALENDARS")

    @property
    def RECONCILE_ON_START(self) -> bool:  # noqa: N802
        return self._get("CADENCE_RECONCILE_ON_START")

    @property
    def TASKS(self) -> tuple[str, ...]:  # noqa: N802
        return self._get("CADENCE_TASKS")

    @property
    def METRICS(self) -> bool:  # noqa: N802
        return self._get("CADENCE_METRICS")

    @property
    def METRICS_PORT(self) -> int | None:  # noqa: N802
        return self._get("CADENCE_METRICS_PORT")

    @property
    def METRICS_ADDRESS(self) -> str:  # noqa: N802
        """Where ``run_cadence`` listens for scrapes: the loopback interface unless set."""
        return self._get("CADENCE_METRICS_ADDRESS")

    @property
    def NOTIFY(self) -> NotifySettings:  # noqa: N802
        return self._get("CADENCE_NOTIFY")


def setting_names() -> tuple[str, ...]:
    """The names of every setting django-cadence reads."""
    return tuple(_SETTINGS)


def setting_default(name: str) -> Any:
    """The default of one setting, as documented in the README."""
    return _SETTINGS[name].default


def validate_all() -> list[ImproperlyConfigured]:
    """Parse every configured setting; return the problems instead of raising the first."""
    problems = []
    for name, setting in _SETTINGS.items():
        if hasattr(django_settings, name):
            try:
                setting.parse(name, getattr(django_settings, name))
            except ImproperlyConfigured as exc:
                problems.append(exc)
    return problems


cadence_settings = CadenceSettings()


@receiver(setting_changed)
def _drop_cached_settings(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("CADENCE_"):
        cadence_settings.clear_cache()
