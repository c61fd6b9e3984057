"""What is wrong with JSON typed in a form, in words: where (line and column), what was
expected there, and a hint for the slips people make coming from Python (single quotes,
``True``, a comma before a closing bracket)."""

from __future__ import annotations

import json

# The json module's messages (Python 3.11 to 3.13), as the expectation at the error's place.
EXPECTED = {
    "Expecting value": "expected a value",
    "Expecting property name enclosed in double quotes": "expected a key in double quotes",
    "Expecting ',' delimiter": "expected a comma",
    "Expecting ':' delimiter": "expected a colon",
    "Extra data": "expected nothing more",
    "Unterminated string starting at": "a string is not closed",
    "Invalid control character at": "a string holds a control character (write \\n for a "
    "line break)",
    "Invalid \\escape": "a backslash starts no known escape",
    "Invalid \\uXXXX escape": "a \\u escape needs four hexadecimal digits",
    "Illegal trailing comma before end of object": "expected a key in double quotes",
    "Illegal trailing comma before end of array": "expected a value",
}

NESTED_TOO_DEEPLY = "This JSON is nested too deeply to read."
NUMBER_TOO_LONG = "A number in this JSON has too many digits to read."


def describe(error: json.JSONDecodeError) -> str:
    """``Not valid JSON at line L, column C: <what was expected>.`` and a hint if one fits."""
    expected = EXPECTED.get(error.msg, error.msg[:1].lower() + error.msg[1:])
    return f"Not valid JSON at line {error.lineno}, column {error.colno}: {expected}.{_hint(error)}"


def _hint(error: json.JSONDecodeError) -> str:
    text, at = error.doc, error.pos
    if text[at : at + 1] == "'":
        return " JSON puts keys and strings in double quotes."
    if text.startswith(("True", "False", "None"), at):
        return " JSON writes true, false and null in lower case."
    before = text[:at].rstrip()
    if before.endswith(",") and text[at : at + 1] in ("}", "]"):
        return " JSON allows no comma before a closing bracket."
    return ""
