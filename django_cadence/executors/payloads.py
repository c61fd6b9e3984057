"""Payloads and outcomes: JSON only, bounded, redacted for display, escaped for logs.

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

MAX_DEPTH = 32
REDACTED = "********"

_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")
_SCALARS = (str, int, float, bool, type(None))


def _where(path: str) -> str:
    return f" at {path[:200]}" if path else ""


def _check(value: Any, path: str, depth: int) -> None:
    """Raise ``InvalidPayload`` for the first value a JSON round trip would not keep."""
    if depth > MAX_DEPTH:
        raise InvalidPayload(f"The payload is nested more than {MAX_DEPTH} levels deep.")
    if isinstance(value, str):
        if _UNSTORABLE_RE.search(value):
            raise InvalidPayload(
                f"The payload has a NUL character or a lone surrogate{_where(path)}, "
                "which the database cannot store."
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidPayload(
                f"The payload has {value!r}{_where(path)}; JSON numbers are finite."
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidPayload(
                    f"The payload has a key of type {type(key).__name__}{_where(path)}; "
                    "JSON object keys are strings."
                )
            _check(key, path, depth)
            _check(item, f"{path}[{key!r}]", depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]", depth + 1)
    elif not isinstance(value, _SCALARS):
        raise InvalidPayload(
            f"The payload has a value of type {type(value).__name__}{_where(path)}; "
            "use JSON types only (dict, list, str, int, float, bool, None)."
        )


def _encoded_size(value: Any) -> int:
    text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8"))


def validate_payload(payload: Any) -> dict[str, Any]:
    """Return ``payload`` if it is a JSON object that fits; raise ``InvalidPayload`` saying why."""
    if not isinstance(payload, dict):
        raise InvalidPayload(
            f"The payload must be a JSON object (a dict), not {type(payload).__name__}."
        )
    _check(payload, "", 1)
    try:
        size = _encoded_size(payload)
    except (TypeError, ValueError) as exc:  # a value the walk let through, e.g. a huge int
        raise InvalidPayload(f"The payload is not serialisable as JSON: {exc}.") from exc
    limit = cadence_settings.PAYLOAD_MAX_BYTES
    if size > limit:
        raise InvalidPayload(
            f"The payload is {size} bytes of JSON; the limit is {limit} "
            "(CADENCE_PAYLOAD_MAX_BYTES)."
        )
    return payload


def _is_secret(key: Any, secrets: tuple[str, ...]) -> bool:
    lowered = str(key).lower()
    return any(secret in lowered for secret in secrets)


def redact(value: Any) -> Any:
    """A copy of ``value`` with the values of secret-looking keys replaced by ``********``.

    A key is secret when it contains (case-insensitively) one of ``CADENCE_SECRET_KEYS``;
    dicts, lists and tuples are copied recursively, anything else is returned as is.
    """
    return _redact(value, cadence_settings.SECRET_KEYS, 0)


def _redact(value: Any, secrets: tuple[str, ...], depth: int) -> Any:
    if depth > 2 * MAX_DEPTH:
        return "[nested too deeply]"
    if isinstance(value, dict):
        return {
            key: REDACTED if _is_secret(key, secrets) else _redact(item, secrets, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        items = [_redact(item, secrets, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def redact_text(text: str) -> str:
    """Best effort for free text (errors, reprs): hide values after secret-looking keys.

    Covers ``password=hunter2``, ``token: abc``, ``'api_key': 'abc'``, ``"secret": "abc"``
    and ``Authorization: Bearer abc``; structured values should go through :func:`redact`.
    A quoted value left open (a repr or a text cut short) is hidden to the end of its line.

    A key starts only where a word starts (the look-behind): a match found inside a word
    would also be found from the word's start, so trying every position of every word would
    only cost time.
    """
    secrets = "|".join(re.escape(secret) for secret in cadence_settings.SECRET_KEYS)
    if not secrets:
        return text
    pattern = re.compile(
        rf"""(?P<key>(?<![\w.-])[\w.-]*(?:{secrets})[\w.-]*["']?\s*[:=]\s*)
        (?:(?P<quote>["'])(?:\\.|(?!(?P=quote)).)*(?:(?P=quote)|$)
          |(?:(?:bearer|basic|token)\s+)?[^\s,;&'"}})\]]+)""",
        re.IGNORECASE | re.VERBOSE | re.MULTILINE,
    )

    def hide(match: re.Match[str]) -> str:
        quote = match["quote"] or ""
        return f"{match['key']}{quote}{REDACTED}{quote}"

    return pattern.sub(hide, text)


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 200
_repr.maxlevel = 3


def outcome_or_none(value: Any) -> Any:
    """What to store as an attempt's outcome: ``value`` itself when it can be stored.

    ``None`` stays ``None``. A value that is not JSON (or not within
    ``CADENCE_PAYLOAD_MAX_BYTES``) is replaced by ``{"repr": ..., "type": ..., "note": ...}``
    with a bounded repr, so a job returning a model instance or a huge list still succeeds.
    """
    if value is None:
        return None  # what most jobs return: nothing to check or measure
    note = None
    try:
        _check(value, "", 1)
        if _encoded_size(value) > cadence_settings.PAYLOAD_MAX_BYTES:
            note = "larger than CADENCE_PAYLOAD_MAX_BYTES"
    except (InvalidPayload, TypeError, ValueError):
        note = "not JSON-serialisable"
    if note is None:
        return value
    kind = type(value)
    return {
        "repr": escape_control(_repr.repr(value))[:500],
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "note": note,
    }


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
