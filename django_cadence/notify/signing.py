"""The webhook's signature, as Stripe and GitHub sign theirs: an HMAC-SHA256 of the timestamp
and the raw body under a shared secret, in one header.

``Cadence-Signature: t=1767225600,v1=5257a8...`` where ``v1`` is the hex HMAC-SHA256 of
``b"1767225600." + body``. A receiver recomputes it over the bytes it received, compares in
constant time, and refuses a timestamp too far from its clock (a replay). :func:`verify` does
all three, for receivers written in Python.
"""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "Cadence-Signature"
TOLERANCE = 300  # seconds a receiver accepts between the timestamp and its clock


class InvalidSignature(ValueError):
    """The signature header is missing, malformed, stale, or does not match the body."""


def signature(secret: str, body: bytes, timestamp: int) -> str:
    """The header's value for ``body`` sent at ``timestamp`` (Unix seconds)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(
    secret: str, body: bytes, header: str | None, *, tolerance: int = TOLERANCE, now: float = 0
) -> int:
    """Check ``header`` against ``body``; returns its timestamp, or raises ``InvalidSignature``."""
    parts: dict[str, list[str]] = {}
    for item in (header or "").split(","):
        key, _, value = item.strip().partition("=")
        parts.setdefault(key, []).append(value)
    try:
        timestamp = int(parts["t"][0])
    except (KeyError, ValueError):
        raise InvalidSignature("no timestamp (t=) in the signature header") from None
    if abs((now or time.time()) - timestamp) > tolerance:
        raise InvalidSignature(f"the timestamp is more than {tolerance} s from now")
    expected = signature(secret, body, timestamp).partition(",v1=")[2]
    if not any(hmac.compare_digest(expected, given) for given in parts.get("v1", [])):
        raise InvalidSignature("no v1 signature matches the body")
    return timestamp
