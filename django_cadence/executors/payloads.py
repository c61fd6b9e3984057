"""Payloads and outcomes: JSON only, bounded; an outcome that cannot be stored kept as a
redacted repr.

A payload is stored in a ``JSONField`` on every supported database and passed to the job as
keyword arguments, so it must survive a JSON round trip unchanged: a JSON object with string
keys, finite numbers, no NUL character and no lone surrogate (PostgreSQL's ``jsonb`` refuses
both). Its size is that of its compact UTF-8 JSON text.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from typing import Any

from ..conf import cadence_settings
from ..exceptions import InvalidPayload
from .log_text import escape_control
from .redaction import MAX_DEPTH, clean_text

_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")
_SCALARS = (str, int, float, bool, type(None))


def _where(path: str) -> str:
    return f" at {path[:200]}" if path else ""


def _check(value: Any, path: str, depth: int, what: str) -> None:
    """Raise ``InvalidPayload`` for the first value a JSON round trip would not keep."""
    if depth > MAX_DEPTH:
        raise InvalidPayload(f"The {what} is nested more than {MAX_DEPTH} levels deep.")
    if isinstance(value, str):
        if _UNSTORABLE_RE.search(value):
            raise InvalidPayload(
                f"The {what} has a NUL character or a lone surrogate{_where(path)}, "
                "which the database cannot store."
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidPayload(
                f"The {what} has {value!r}{_where(path)}; JSON numbers are finite."
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidPayload(
                    f"The {what} has a key of type {type(key).__name__}{_where(path)}; "
                    "JSON object keys are strings."
                )
            _check(key, path, depth, what)
            _check(item, f"{path}[{key!r}]", depth + 1, what)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]", depth + 1, what)
    elif not isinstance(value, _SCALARS):
        raise InvalidPayload(
            f"The {what} has a value of type {type(value).__name__}{_where(path)}; "
            "use JSON types only (dict, list, str, int, float, bool, None)."
        )


def _encoded_size(value: Any) -> int:
    text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8"))


def validate_json_object(value: Any, what: str = "payload") -> dict[str, Any]:
    """Return ``value`` if it is a JSON object that fits; raise ``InvalidPayload`` saying why.

    The rules of every job-provided JSON object (a payload, a schedule's metadata): string
    keys, JSON types only, finite numbers, no NUL or lone surrogate anywhere, at most
    ``MAX_DEPTH`` levels and ``CADENCE_PAYLOAD_MAX_BYTES`` of compact UTF-8 JSON.
    """
    if not isinstance(value, dict):
        raise InvalidPayload(
            f"The {what} must be a JSON object (a dict), not {type(value).__name__}."
        )
    _check(value, "", 1, what)
    try:
        size = _encoded_size(value)
    except (TypeError, ValueError) as exc:  # a value the walk let through, e.g. a huge int
        raise InvalidPayload(f"The {what} is not serialisable as JSON: {exc}.") from exc
    limit = cadence_settings.PAYLOAD_MAX_BYTES
    if size > limit:
        raise InvalidPayload(
            f"The {what} is {size} bytes of JSON; the limit is {limit} (CADENCE_PAYLOAD_MAX_BYTES)."
        )
    return value


def validate_payload(payload: Any) -> dict[str, Any]:
    """Return ``payload`` if it is a JSON object that fits; raise ``InvalidPayload`` saying why."""
    return validate_json_object(payload, "payload")


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 200
_repr.maxlevel = 3


def outcome_or_none(value: Any) -> Any:
    """What to store as an attempt's outcome: ``value`` itself when it can be stored.

    ``None`` stays ``None``. A value that cannot be stored (not JSON, NaN, a NUL or a lone
    surrogate, deeper than ``MAX_DEPTH``, larger than ``CADENCE_PAYLOAD_MAX_BYTES``) is
    replaced by ``{"repr": ..., "type": ..., "note": ...}``: a bounded, redacted repr and
    the reason, so a job returning a model instance or a huge list still succeeds. Never
    raises, whatever the value's ``repr`` does.
    """
    if value is None:
        return None  # what most jobs return: nothing to check or measure
    note = None
    try:
        _check(value, "", 1, "outcome")
        if _encoded_size(value) > cadence_settings.PAYLOAD_MAX_BYTES:
            note = "larger than CADENCE_PAYLOAD_MAX_BYTES"
    except InvalidPayload as exc:
        note = str(exc)
    except Exception:  # noqa: BLE001 - whatever the value does, the try still succeeds
        note = "not JSON-serialisable"
    if note is None:
        return value
    kind = type(value)
    return {
        "repr": clean_text(escape_control(_safe_repr(value)), 500),
        "type": clean_text(f"{kind.__module__}.{kind.__qualname__}", 300),
        "note": clean_text(note, 500),
    }


def _safe_repr(value: Any) -> str:
    try:
        return _repr.repr(value)
    except Exception:  # noqa: BLE001 - reprlib catches most, not a failing __repr__ of a container
        return f"<{type(value).__name__} whose repr() raised>"
