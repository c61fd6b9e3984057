"""Readers of one setting's value: each checks it and returns it parsed, or raises
``ImproperlyConfigured`` naming the setting and what it accepts."""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured


def duration(name: str, value: Any, *, allow_zero: bool = False) -> timedelta:
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


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(f"{name} must be an integer of 1 or more, not {value!r}.")
    return value


def plan_batch(name: str, value: Any) -> int:
    """1 to 10,000: one batch's schedule ids go into one statement's ``IN`` list, and
    SQLite takes at most 32,766 parameters in a statement."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
        raise ImproperlyConfigured(f"{name} must be an integer from 1 to 10000, not {value!r}.")
    return value


def zero_ok_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ImproperlyConfigured(f"{name} must be an integer of 0 or more, not {value!r}.")
    return value


def string_list(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise ImproperlyConfigured(f"{name} must be a list of strings, not {value!r}.")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise ImproperlyConfigured(f"{name} must contain only non-empty strings, not {value!r}.")
    return tuple(value)


def zero_ok_duration(name: str, value: Any) -> timedelta:
    return duration(name, value, allow_zero=True)


def boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ImproperlyConfigured(f"{name} must be True or False, not {value!r}.")
    return value


def optional_positive_int(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(
            f"{name} must be None or an integer of 1 or more, not {value!r}."
        )
    return value


def optional_port(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ImproperlyConfigured(f"{name} must be None or a TCP port (1-65535), not {value!r}.")
    return value


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def listen_address(name: str, value: Any) -> str:
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
