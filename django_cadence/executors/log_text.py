"""Job-provided text as it goes into a log line: on one visible line, redacted and bounded;
and the headline of a recorded error, the line a log line, a message or a list shows of it.

A raw newline in a logged value would forge a second record, and an escape sequence or a
bidi override would rewrite what a terminal shows: every value from outside that reaches a
log line goes through :func:`log_value` (or :func:`escape_control`, for text already clean).
"""

from __future__ import annotations

import functools

from ..conf import cadence_settings
from .redaction import clean_text

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
