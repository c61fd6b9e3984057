"""Payloads and outcomes: JSON only, bounded, redacted for display, escaped for logs.

A payload is stored in a ``JSONField`` on every supported database and passed to the job as
keyword arguments, so it must survive a JSON round trip unchanged: a JSON object with string
keys, finite numbers, no NUL character and no lone surrogate (PostgreSQL's ``jsonb`` refuses
both). Its size is that of its compact UTF-8 JSON text.
"""

from __future__ import annotations

import functools
import json
import math
import re
import reprlib
from typing import Any

from ..conf import cadence_settings
from ..exceptions import InvalidPayload
from .redaction import MAX_DEPTH, REDACTED, clean_text, redact, redact_text

__all__ = [
    "MAX_DEPTH",
    "REDACTED",
    "clean_text",
    "escape_control",
    "headline",
    "log_value",
    "outcome_or_none",
    "redact",
    "redact_text",
    "validate_payload",
]

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


_CONTROL = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))},
    **{code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *range(0x202A, 0x202F))},
    **{code: f"\\u{code:04x}" for code in range(0x2066, 0x206A)},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


def escape_control(text: str) -> str:
    """``text`` on one visible line: control, line-separator and bidi characters escaped.

    Job-provided text goes into log lines; a raw newline would forge a second record and
    an escape sequence or a bidi override would rewrite what a terminal shows. Backslashes
    are left alone, so an escaped character is not distinguishable from its spelled-out form.
    """
    return str(text).translate(_CONTROL)


def log_value(value: object, limit: int = 300) -> str:
    """A value from outside (a name, a reason, a worker id, an error) as it goes into a log
    line: redacted, storable, at most about ``limit`` characters, on one visible line.

    Schedule names and worker ids recur in every line of a busy worker: short strings are
    cleaned once per set of secret names (``_short_log_value``)."""
    if type(value) is str and len(value) <= SHORT_LOG_VALUE:
        return _short_log_value(value, limit, cadence_settings.SECRET_KEYS)
    return escape_control(clean_text(value, limit))


SHORT_LOG_VALUE = 200


@functools.lru_cache(maxsize=4096)
def _short_log_value(value: str, limit: int, secret_keys: tuple[str, ...]) -> str:
    """``log_value`` of a short string; ``secret_keys`` is part of the key, so a change of
    ``CADENCE_SECRET_KEYS`` is never served from the cache."""
    return escape_control(clean_text(value, limit))


TRACEBACK_HEAD = "Traceback (most recent call last):"


def headline(text: str) -> str:
    """The line that says what went wrong: a traceback's exception line, else the first line.

    Errors recorded by the engine are whole tracebacks, whose first line is always
    ``Traceback (most recent call last):``; the exception (``module.Error: message``) is the
    first unindented line after the frames of the last traceback (the last of a chain).
    """
    lines = text.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK_HEAD)]
    if starts:
        for line in lines[starts[-1] + 1 :]:
            if line.strip() and not line[0].isspace():
                return line
    return lines[0] if lines else ""
