"""The commands' argument types: what each takes, and the words of what it refuses."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest

from django_cadence.management.arguments import (
    age,
    count,
    positive_int,
    positive_seconds,
    queues,
    worker_id,
)


def test_age_reads_the_short_form():
    assert age("30d") == timedelta(days=30)
    assert age(" 2W ") == timedelta(weeks=2)


@pytest.mark.parametrize("typed", ["0d", "30", "1h30m", "thirty days"])
def test_age_refuses_zero_and_other_forms_with_examples(typed):
    with pytest.raises(argparse.ArgumentTypeError, match=r"not an age such as 30d, 12h"):
        age(typed)


@pytest.mark.parametrize(
    ("parse", "typed", "expected"),
    [(count, "0", 0), (positive_int, "1", 1), (positive_seconds, "0.5", 0.5)],
)
def test_numbers_take_their_lowest_value(parse, typed, expected):
    assert parse(typed) == expected


@pytest.mark.parametrize(
    ("parse", "typed", "message"),
    [
        (count, "-1", "must be 0 or more"),
        (count, "x", "'x' is not an integer"),
        (positive_int, "0", "must be 1 or more"),
        (positive_int, "-1", "must be 1 or more"),
        (positive_seconds, "0", "must be more than 0 seconds"),
        (positive_seconds, "soon", "'soon' is not a number of seconds"),
        (worker_id, "a b", "whitespace"),
    ],
)
def test_refusals_say_what_is_accepted(parse, typed, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(typed)


def test_queues_reads_the_names_served():
    assert [share.name for share in queues("billing,reports")] == ["billing", "reports"]


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("", "no empty item"),
        ("a b", "starts with a letter or digit"),
        (",".join(f"q{i}" for i in range(300)), "at most 1000 characters"),
    ],
)
def test_queues_refuses_saying_why(typed, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        queues(typed)
