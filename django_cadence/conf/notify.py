"""``CADENCE_NOTIFY``: its channels and events, read into :class:`NotifySettings`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from .readers import duration, positive_int, string_list

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


def notify_settings(name: str, value: Any) -> NotifySettings:
    """``{"channels": {name: {"type": ..., ...}}, "failures": 3}``, every key checked."""
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f'{name} must be a dict such as {{"channels": {{...}}}}.')
    unknown = set(value) - {"channels", "failures"}
    if unknown:
        raise ImproperlyConfigured(
            f"{name} has unknown keys {sorted(unknown)}: it takes channels and failures."
        )
    failures = positive_int(f'{name}["failures"]', value.get("failures", 3))
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
        events = string_list(f'{where}["events"]', entry["events"])
        wrong = [e for e in events if e not in NOTIFY_EVENTS]
        if wrong:
            raise ImproperlyConfigured(f'{where}["events"]: {wrong} are not among {NOTIFY_EVENTS}.')
        options["events"] = events
    if "metadata" in entry:
        options["metadata"] = _metadata_filter(f'{where}["metadata"]', entry["metadata"])
    if "tries" in entry:
        options["tries"] = positive_int(f'{where}["tries"]', entry["tries"])
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
        return {"to": string_list(f'{where}["to"]', entry["to"])} if "to" in entry else {}
    if kind == "webhook":
        url, secret = entry.get("url"), entry.get("secret")
        if not isinstance(url, str) or not re.match(r"https?://[^\s/]+", url):
            raise ImproperlyConfigured(f'{where}["url"] must be an http:// or https:// URL.')
        if not isinstance(secret, str) or len(secret) < 16:
            raise ImproperlyConfigured(
                f'{where}["secret"] must be a string of 16 characters or more, shared with '
                "the receiver, which checks the signature with it."
            )
        timeout = duration(f'{where}["timeout"]', entry.get("timeout", 10)).total_seconds()
        return {"url": url, "secret": secret, "timeout": timeout}
    if kind == "sentry":
        return {"margin": positive_int(f'{where}["margin"]', entry.get("margin", 1))}
    path = entry.get("path")
    if not isinstance(path, str) or not re.fullmatch(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*", path):
        raise ImproperlyConfigured(
            f'{where}["path"] must be the dotted path of a function, such as '
            '"myproject.alerts.to_slack".'
        )
    return {"path": path}
