"""The commands' argument types (argparse ``type=``): each turns what was typed into a value,
or raises ``ArgumentTypeError`` saying what it accepts, which argparse shows beside the option.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from django_cadence.engine.workers import check_worker_id
from django_cadence.schedule import durations
from django_cadence.schedule.queues import InvalidQueue, QueueShare, describe, parse_queues

MAX_QUEUES_TEXT = 1000  # Worker.queues holds this many characters


def count(value: str) -> int:
    """A whole number, 0 or more (``--keep``)."""
    return _whole_number(value, least=0)


def positive_int(value: str) -> int:
    """A whole number, 1 or more (``--concurrency``, ``--batch-size``)."""
    return _whole_number(value, least=1)


def positive_seconds(value: str) -> float:
    """A number of seconds above 0 (``--max-tick``)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not number > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return number


def age(value: str) -> timedelta:
    """An age in the commands' short form (``durations.short``), more than zero
    (``--older-than``)."""
    parsed = durations.short(value)
    if not parsed:  # None, or zero
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an age such as {durations.SHORT_EXAMPLES} (more than zero)"
        )
    return parsed


def worker_id(value: str) -> str:
    """``--worker-id``: printable, no whitespace, at most 200 characters (it reaches logs)."""
    try:
        return check_worker_id(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def queues(value: str) -> tuple[QueueShare, ...]:
    """``--queues reports:2,default``: the queues a worker serves, by name, each with the
    most of its threads its tries may hold (``:N``; none: any free thread)."""
    try:
        shares = parse_queues(value)
    except InvalidQueue as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if len(describe(shares)) > MAX_QUEUES_TEXT:
        raise argparse.ArgumentTypeError(f"at most {MAX_QUEUES_TEXT} characters")
    return shares


def _whole_number(value: str, *, least: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if number < least:
        raise argparse.ArgumentTypeError(f"must be {least} or more")
    return number
