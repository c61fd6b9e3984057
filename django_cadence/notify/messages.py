"""The message of one episode's opening or resolution: one JSON body (schema version 1,
docs/reference/notifications.md) that the webhook posts, the callable receives, and the
mail renders as text.

It carries names, instants, counts and the redacted headline of an error; never a payload.
The schedule's metadata is included through the same redaction as the admin's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..executors.log_text import headline
from ..executors.redaction import clean_text, redact
from ..models import Event, Notice, NoticeState

SCHEMA = 1
ERROR_CHARS = 500

_OPENED = {
    Event.DEAD_LETTER: "{name}: an attempt was dead-lettered",
    Event.FAILING: "{name}: {count} failed tries in a row",
    Event.OVERDUE: "{name} is overdue: no success for longer than it may go",
    Event.PAUSED: "{name} was auto-paused",
    Event.NO_WORKER: "No run_cadence worker is alive while work is due",
    Event.WORKER_UNHEALTHY: "A run_cadence worker on {name} exited unhealthy",
    Event.UNSERVED_QUEUE: "Due work waits in queue {name}, which no live worker serves",
}
_WHAT = {
    Event.DEAD_LETTER: "dead letters of {name}",
    Event.FAILING: "failures of {name}",
    Event.OVERDUE: "{name} overdue",
    Event.PAUSED: "{name} auto-paused",
    Event.NO_WORKER: "no live worker",
    Event.WORKER_UNHEALTHY: "unhealthy worker exits on {name}",
    Event.UNSERVED_QUEUE: "queue {name} unserved",
}


def detail(error: object) -> str:
    """What a notice keeps of an error: its headline (a traceback's exception line), redacted
    and bounded, as the bodies carry it."""
    return clean_text(headline(clean_text(error)), ERROR_CHARS)


def iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def summary(notice: Notice, state: str) -> str:
    """One line a person reads first (a mail's subject, a chat message)."""
    name = clean_text(notice.name, 200)
    if state == NoticeState.OPEN:
        return _OPENED[Event(notice.event)].format(name=name, count=notice.count)
    what = _WHAT[Event(notice.event)].format(name=name)
    why = f": {notice.resolution}" if notice.resolution else ""
    return f"Resolved: {what}, {notice.count} in this episode{why}"


def body(notice: Notice, state: str, *, metadata: Any = None, test: bool = False) -> dict[str, Any]:
    """The message, as JSON-ready values (schema version 1)."""
    error = clean_text(notice.detail, ERROR_CHARS) if notice.detail else None
    schedule = notice.schedule_id is not None or notice.subject.startswith("schedule:")
    return {
        "schema": SCHEMA,
        "id": f"cadence-notice-{notice.pk}-{state}",
        "event": notice.event,
        "state": state,
        "episode": notice.pk,
        "schedule": clean_text(notice.name, 200) if schedule else None,
        "host": clean_text(notice.name, 200) if notice.event == Event.WORKER_UNHEALTHY else None,
        "at": iso(notice.opened_at if state == NoticeState.OPEN else notice.resolved_at),
        "opened_at": iso(notice.opened_at),
        "resolved_at": iso(notice.resolved_at) if state == NoticeState.RESOLVED else None,
        "count": notice.count,
        "summary": summary(notice, state),
        "error": error or None,
        "attempt": notice.attempt_id,
        "resolution": (notice.resolution or None) if state == NoticeState.RESOLVED else None,
        "metadata": redact(metadata) if isinstance(metadata, dict) else {},
        "test": test,
    }


def as_text(message: dict[str, Any]) -> str:
    """The body as lines of ``key: value`` (a mail's text, a log's)."""
    lines = [message["summary"], ""]
    for key in ("event", "state", "schedule", "host", "at", "opened_at", "resolved_at"):
        if message.get(key) is not None:
            lines.append(f"{key}: {message[key]}")
    lines.append(f"count: {message['count']}")
    for key in ("attempt", "error", "resolution"):
        if message.get(key) is not None:
            lines.append(f"{key}: {message[key]}")
    if message.get("metadata"):
        labels = ", ".join(f"{k}={v}" for k, v in sorted(message["metadata"].items()))
        lines.append(f"metadata: {labels}")
    lines.append(f"episode: {message['episode']} ({message['id']})")
    return "\n".join(lines) + "\n"


def test_body(channel: str, now: datetime) -> dict[str, Any]:
    """A test message for ``channel``: the schema of a real one, ``test`` true."""
    return {
        "schema": SCHEMA,
        "id": f"cadence-test-{channel}-{int(now.timestamp())}",
        "event": "test",
        "state": NoticeState.OPEN.value,
        "episode": None,
        "schedule": None,
        "host": None,
        "at": iso(now),
        "opened_at": iso(now),
        "resolved_at": None,
        "count": 1,
        "summary": f"Test notification from django-cadence to the channel {channel}",
        "error": None,
        "attempt": None,
        "resolution": None,
        "metadata": {},
        "test": True,
    }
