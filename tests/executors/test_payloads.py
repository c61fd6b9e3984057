"""Payload validation, redaction and outcomes; no database."""

from __future__ import annotations

import json
from collections import namedtuple
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.test import override_settings

from django_cadence.exceptions import InvalidPayload
from django_cadence.executors.payloads import outcome_or_none, validate_payload
from django_cadence.executors.redaction import MAX_DEPTH, REDACTED, redact, redact_text

Pair = namedtuple("Pair", "first second")


def nested(depth: int) -> dict:
    """A payload whose containers nest ``depth`` levels deep (the top-level dict is 1)."""
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def self_referencing() -> dict:
    value: dict = {}
    value["self"] = value
    return value


# validate_payload


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"a": 1, "b": [1, 2.5, None, True, "x"], "c": {"d": "é 日本 😀"}},
        {"t": (1, 2)},
        {"big": 2**64, "negative": -0.0},
        nested(MAX_DEPTH),
    ],
    ids=["empty", "json-types", "tuple", "numbers", "max-depth"],
)
def test_validate_payload_accepts_json_objects(payload):
    assert validate_payload(payload) is payload


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ([1, 2], r"must be a JSON object \(a dict\), not list"),
        ("{}", r"not str"),
        (None, r"not NoneType"),
        ({"a": float("nan")}, r"nan at \['a'\]; JSON numbers are finite"),
        ({"a": [1, float("-inf")]}, r"-inf at \['a'\]\[1\]"),
        ({"a": {1, 2}}, r"type set at \['a'\]"),
        ({"a": datetime(2026, 1, 1, tzinfo=UTC)}, r"type datetime at \['a'\]"),
        ({"a": b"x"}, r"type bytes"),
        ({"a": Decimal("1.5")}, r"type Decimal"),
        ({"a": [{"b": object()}]}, r"type object at \['a'\]\[0\]\['b'\]"),
        ({1: "x"}, r"key of type int; JSON object keys are strings"),
        ({"a": {None: 1}}, r"key of type NoneType at \['a'\]"),
        ({"a": "x\x00y"}, r"NUL character or a lone surrogate at \['a'\]"),
        ({"a\x00": 1}, r"NUL character"),
        ({"a": "\ud800"}, r"lone surrogate"),
        (nested(MAX_DEPTH + 1), rf"nested more than {MAX_DEPTH} levels"),
        (self_referencing(), r"nested more than"),
        ({"a": 10**5000}, r"not serialisable as JSON"),
    ],
    ids=[
        "list",
        "str",
        "none",
        "nan",
        "infinity-in-list",
        "set",
        "datetime",
        "bytes",
        "decimal",
        "deep-key-path",
        "int-key",
        "nested-none-key",
        "nul-value",
        "nul-key",
        "surrogate",
        "too-deep",
        "cycle",
        "huge-int",
    ],
)
def test_validate_payload_rejects_with_reason(payload, match):
    with pytest.raises(InvalidPayload, match=match) as info:
        validate_payload(payload)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("limit", "ok"),
    [(10, True), (9, False)],
    ids=["at-limit", "one-byte-over"],
)
def test_validate_payload_size_counts_compact_utf8_bytes(limit, ok):
    payload = {"a": "é"}  # {"a":"é"} is 9 characters, 10 bytes
    with override_settings(CADENCE_PAYLOAD_MAX_BYTES=limit):
        if ok:
            assert validate_payload(payload) is payload
        else:
            with pytest.raises(
                InvalidPayload,
                match=r"is 10 bytes of JSON; the limit is 9 \(CADENCE_PAYLOAD_MAX_BYTES\)",
            ):
                validate_payload(payload)


def test_validate_payload_default_limit_rejects_large_payload():
    with pytest.raises(InvalidPayload, match="CADENCE_PAYLOAD_MAX_BYTES"):
        validate_payload({"blob": "x" * 70_000})


# redact


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"user": "bob", "password": "hunter2"},
            {"user": "bob", "password": REDACTED},
        ),
        (
            {"nested": {"API_KEY": "k", "items": [{"X-Auth-Token": "t", "ok": 1}]}},
            {"nested": {"API_KEY": REDACTED, "items": [{"X-Auth-Token": REDACTED, "ok": 1}]}},
        ),
        ({"credentials": {"user": "bob"}}, {"credentials": REDACTED}),
        ({"t": ({"MySecret": 1}, 2)}, {"t": ({"MySecret": REDACTED}, 2)}),
        ([{"authorization": "Bearer x"}], [{"authorization": REDACTED}]),
        (Pair({"token": 1}, 2), ({"token": REDACTED}, 2)),
        ({1: "x", None: "y"}, {1: "x", None: "y"}),
        ("password", "password"),
        (5, 5),
        (None, None),
    ],
    ids=[
        "top-level",
        "nested-in-list",
        "whole-container",
        "tuple",
        "list-top-level",
        "namedtuple",
        "non-str-keys",
        "plain-str",
        "int",
        "none",
    ],
)
def test_redact_replaces_secret_values(value, expected):
    assert redact(value) == expected


def test_redact_copies_and_leaves_original_alone():
    original = {"a": {"token": "t"}, "b": [1, {"c": 2}]}
    result = redact(original)
    assert original == {"a": {"token": "t"}, "b": [1, {"c": 2}]}
    assert result["b"] is not original["b"]
    assert result["b"][1] is not original["b"][1]


@override_settings(CADENCE_SECRET_KEYS=["PIN"])
def test_redact_follows_secret_keys_setting_which_extends_the_built_in_names():
    assert redact({"pin_code": "1234", "password": "x", "pinned": 1}) == {
        "pin_code": REDACTED,
        "password": REDACTED,
        "pinned": 1,
    }


def test_redact_survives_cycles():
    result = redact(self_referencing())
    depth = 0
    while isinstance(result, dict):
        result, depth = result["self"], depth + 1
    assert result == "[nested too deeply]"
    assert depth > MAX_DEPTH


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2 user=bob", f"password={REDACTED} user=bob"),
        ("{'api_key': 'abc', 'x': 1}", f"{{'api_key': '{REDACTED}', 'x': 1}}"),
        ('{"secret": "a\\"b", "n": 1}', f'{{"secret": "{REDACTED}", "n": 1}}'),
        ("Authorization: Bearer abc.def", f"Authorization: Bearer {REDACTED}"),
        ("GET /cb?access_token=abc&x=1", f"GET /cb?access_token={REDACTED}&x=1"),
        ("TOKEN: xyz", f"TOKEN: {REDACTED}"),
        ("nothing to hide: here", "nothing to hide: here"),
        ("db.user_password=abc x=1", f"db.user_password={REDACTED} x=1"),
        ("{'token': 'abc", f"{{'token': '{REDACTED}'"),
        ("{'token': 'abc\nnext line", f"{{'token': '{REDACTED}'\nnext line"),
        ('"secret": "a\\', f'"secret": "{REDACTED}"'),
    ],
    ids=[
        "key-value",
        "python-repr",
        "json-escaped-quote",
        "bearer",
        "query",
        "case",
        "none",
        "inside-a-word",
        "quote-left-open",
        "quote-open-to-end-of-line",
        "cut-after-a-backslash",
    ],
)
def test_redact_text_hides_values_after_secret_keys(text, expected):
    assert redact_text(text) == expected


# outcome_or_none


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


class MultilineRepr:
    def __repr__(self):
        return "line one\nline two"


@pytest.mark.parametrize(
    "value",
    [None, 3, "text", [1, "a"], {"a": [1, {"b": None}]}],
    ids=["none", "int", "str", "list", "dict"],
)
def test_outcome_or_none_keeps_json_values(value):
    assert outcome_or_none(value) is value


@pytest.mark.parametrize(
    ("value", "repr_start", "type_name", "note"),
    [
        ({1, 2}, "{1, 2}", "builtins.set", "a value of type set"),
        (float("nan"), "nan", "builtins.float", "JSON numbers are finite"),
        ({1: "x"}, "{1: 'x'}", "builtins.dict", "a key of type int"),
        (b"\x00", "b'\\x00'", "builtins.bytes", "a value of type bytes"),
        (BadRepr(), "<BadRepr instance at", f"{__name__}.BadRepr", "of type BadRepr"),
        (
            MultilineRepr(),
            "line one\\nline two",
            f"{__name__}.MultilineRepr",
            "of type MultilineRepr",
        ),
        (
            list(range(100)),
            "[0, 1, 2, 3, 4, 5, ...]",
            "builtins.list",
            "larger than CADENCE_PAYLOAD_MAX_BYTES",
        ),
    ],
    ids=["set", "nan", "int-key", "bytes", "bad-repr", "multiline-repr", "too-large"],
)
def test_outcome_or_none_summarises_other_values(value, repr_start, type_name, note):
    with override_settings(CADENCE_PAYLOAD_MAX_BYTES=100):
        outcome = outcome_or_none(value)
    assert outcome == {"repr": outcome["repr"], "type": type_name, "note": outcome["note"]}
    assert note in outcome["note"]
    assert outcome["repr"].startswith(repr_start)
    json.dumps(outcome, allow_nan=False)


def test_outcome_or_none_bounds_repr():
    outcome = outcome_or_none({"s": "x" * 1_000_000, "o": object()})
    assert "of type object" in outcome["note"]
    assert len(outcome["repr"]) <= 500
