"""Queue names and a worker's ``--queues`` list: which workers run a schedule's attempts.

A queue is a short name on a schedule (``Schedule.queue``); a worker serves every queue, or
only those it is given (``run_cadence --queues billing,reports:2``), each optionally with the
share of the worker's threads its tries may hold at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..exceptions import CadenceError

DEFAULT_QUEUE = "default"
MAX_QUEUE_NAME = 64  # Schedule.queue holds this many characters
# A letter or digit first, then letters, digits, "_", "-" and ".": safe in a command line,
# a comma-separated list, a log line and a metric label.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


class InvalidQueue(CadenceError, ValueError):
    """A queue name, or a ``--queues`` list, that cannot be used."""


def queue_name_error(value: object) -> str:
    """Why ``value`` cannot name a queue ("" when it can)."""
    if not isinstance(value, str):
        return f"a queue name is a string, not {type(value).__name__}."
    if not value:
        return f"a queue name cannot be empty; leave the field out for {DEFAULT_QUEUE!r}."
    if len(value) > MAX_QUEUE_NAME:
        return f"a queue name has at most {MAX_QUEUE_NAME} characters, not {len(value)}."
    if not _NAME.fullmatch(value):
        return (
            "a queue name starts with a letter or digit and has only letters, digits, "
            f"_, - and . (such as reports or billing-eu), not {ascii(value)[:80]}."
        )
    return ""


def check_queue_name(value: object) -> str:
    """``value`` if it can name a queue; ``InvalidQueue`` saying why not."""
    error = queue_name_error(value)
    if error:
        raise InvalidQueue(error)
    assert isinstance(value, str)
    return value


@dataclass(frozen=True)
class QueueShare:
    """A queue a worker serves, and how many of its threads its tries may hold (None: any)."""

    name: str
    threads: int | None = None

    def __str__(self) -> str:
        return self.name if self.threads is None else f"{self.name}:{self.threads}"


def parse_queues(text: str) -> tuple[QueueShare, ...]:
    """``"billing,reports:2"`` -> the queues served, in order; ``InvalidQueue`` naming the
    first bad item. A name given twice is refused (which share would hold?)."""
    shares: list[QueueShare] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise InvalidQueue(
                f"--queues lists queue names separated by commas, with no empty item: {text!r}."
            )
        name, sep, count = item.partition(":")
        check_queue_name(name)
        threads = None
        if sep:
            if not count.isdigit() or int(count) < 1:
                raise InvalidQueue(
                    f"{item!r}: the share after the colon is a number of threads, at least 1."
                )
            threads = int(count)
        if any(s.name == name for s in shares):
            raise InvalidQueue(f"--queues names {name!r} twice.")
        shares.append(QueueShare(name, threads))
    return tuple(shares)


def served_names(shares: tuple[QueueShare, ...] | None) -> tuple[str, ...] | None:
    """The names of the queues served, sorted (a stable shape for the claim's read); None
    when every queue is."""
    return None if shares is None else tuple(sorted(s.name for s in shares))


def describe(shares: tuple[QueueShare, ...] | None) -> str:
    """How a worker's queues are shown: ``billing,reports:2``, or ``*`` for every queue."""
    return "*" if shares is None else ",".join(str(s) for s in shares)
