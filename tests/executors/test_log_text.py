"""Values as they go into log lines: control, line-separator and bidi characters escaped;
no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from django_cadence.executors.log_text import escape_control


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\nb", "a\\nb"),
        ("a\r\nb", "a\\r\\nb"),
        ("a\tb", "a\\tb"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("\x00\x07\x7f", "\\x00\\x07\\x7f"),
        ("\x85\x9b", "\\x85\\x9b"),
        ("a\u2028b\u2029c", "a\\u2028b\\u2029c"),
        ("\u202egnp.exe", "\\u202egnp.exe"),
        ("\u2066x\u2069", "\\u2066x\\u2069"),
        ("plain é 日本 😀 C:\\path", "plain é 日本 😀 C:\\path"),
    ],
    ids=[
        "newline",
        "crlf",
        "tab",
        "ansi-escape",
        "c0-and-del",
        "c1",
        "line-separators",
        "bidi-override",
        "bidi-isolate",
        "printable-unchanged",
    ],
)
def test_escape_control_escapes_visibly(text, expected):
    assert escape_control(text) == expected


@given(st.text())
def test_escape_control_always_one_line(text):
    escaped = escape_control(text)
    assert len(escaped.splitlines()) <= 1
    assert not any(0x80 <= ord(c) < 0xA0 or ord(c) < 0x20 for c in escaped)
