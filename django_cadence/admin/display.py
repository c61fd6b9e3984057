"""How the admin shows job-provided values: redacted, escaped, and never trusted as HTML.

Payloads, outcomes, errors and try histories come from jobs (and so, indirectly, from whoever
feeds those jobs). Everything here builds HTML with ``format_html`` / ``format_html_join``,
which escape every argument; nothing job-provided is ever passed to ``mark_safe``. Secrets
are hidden first: structured values through ``redaction.redact``, free text through
``redaction.redact_text``. A changelist shows one excerpt per row, so only the part shown is
redacted there (see :func:`scrubbed`); a detail page redacts the whole text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, tzinfo
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..executors.log_text import headline
from ..executors.redaction import redact, redact_text
from ..models import Status
from ..schedule.describe import zone
from ..schedule.timefmt import format_instant, format_utc

# A read-only JSONField is rendered as stored; these read-only stand-ins show it redacted.
SHOWN_AS = {"payload": "payload_shown", "metadata": "metadata_shown"}

EXCERPT_CHARS = 120
TOOLTIP_CHARS = 1000
# Characters redacted past a cut: a long secret replaced by ******** leaves enough to show.
REDACT_MARGIN = 200
STATUS_LABELS = dict(Status.choices)


def status_badge(status: str | None) -> SafeString | str:
    """A coloured label for an attempt status (the CSS colours ``cadence-status-<status>``)."""
    if not status:
        return "-"
    label = STATUS_LABELS.get(status, status)
    return format_html('<span class="cadence-badge cadence-status-{}">{}</span>', status, label)


def strip(
    cells: Sequence[tuple[datetime, str, str]], link: str = "", tz_name: str | None = None
) -> SafeString | str:
    """Recent attempts as coloured cells, oldest first: ``(occurrence_at, status, trigger)``."""
    if not cells:
        return "-"
    tz = zone(tz_name)
    spans = format_html_join(
        "",
        '<span class="cadence-cell cadence-status-{}" title="{}"></span>',
        ((status, _cell_title(at, status, trigger, tz)) for at, status, trigger in cells),
    )
    if link:
        return format_html('<a class="cadence-strip" href="{}">{}</a>', link, spans)
    return format_html('<span class="cadence-strip">{}</span>', spans)


def _cell_title(at: datetime, status: str, trigger: str, tz: tzinfo) -> str:
    manual = " (run now)" if trigger == "manual" else ""
    return f"{format_instant(at, tz)}: {STATUS_LABELS.get(status, status)}{manual}"


def clipped(text: str, width: str = "narrow") -> SafeString:
    """``text`` on one line, cut with an ellipsis past the column's width; whole in the tooltip."""
    text = visible(text)
    return format_html(
        '<span class="cadence-clip cadence-{}" title="{}">{}</span>', width, text, text
    )


SURROGATE = re.compile("[\ud800-\udfff]")


def visible(text: str) -> str:
    """``text`` with each lone surrogate (from an undecodable byte) written as its escape:
    a page holding one cannot be encoded as UTF-8 and would be a server error."""
    return SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def json_block(value: Any) -> SafeString | str:
    """A JSON value, secrets redacted, pretty-printed and escaped in a ``<pre>``."""
    if value is None:
        return "-"
    text = json.dumps(redact(value), indent=2, ensure_ascii=False, default=str)
    return format_html('<pre class="cadence-pre">{}</pre>', visible(text))


def text_block(text: str | None) -> SafeString | str:
    """Free job text (an error, a traceback), secrets scrubbed, escaped in a ``<pre>``."""
    if not text:
        return "-"
    text = visible(redact_text(str(text)))
    return format_html('<pre class="cadence-pre cadence-error">{}</pre>', text)


def error_block(text: str | None, executor: str = "") -> SafeString | str:
    """An error as an operator reads it: what went wrong, where in the job, then (on demand,
    at full height) the whole traceback. Secrets scrubbed, everything escaped."""
    if not text:
        return "-"
    text = visible(redact_text(str(text)))
    frame = job_frame(text, executor)
    where = format_html('<pre class="cadence-pre cadence-frame">{}</pre>', frame) if frame else ""
    lines = text.strip().count("\n") + 1
    return format_html(
        '<div class="cadence-error"><p class="cadence-headline">{}</p>{}'
        "<details><summary>Whole text ({} line{})</summary>"
        '<pre class="cadence-pre cadence-full">{}</pre></details></div>',
        headline(text),
        where,
        lines,
        "" if lines == 1 else "s",
        text,
    )


FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+, in .*$')
LIBRARY = ("/django_cadence/", "/site-packages/", "/dist-packages/", "/lib/python")


def job_frame(text: str, executor: str = "") -> str:
    """The traceback's frame in the job's own code (its line and source), innermost first.

    The job's module (from the executor's dotted path) wins; else the innermost frame outside
    this package and installed libraries; else none (the error is not a traceback).
    """
    lines = text.splitlines()
    frames = [(i, m["path"]) for i, line in enumerate(lines) if (m := FRAME.match(line))]
    module = executor.rpartition(".")[0].replace(".", "/")

    def pick(test: Any) -> str:
        for i, path in reversed(frames):
            if test(path):
                source = (
                    lines[i + 1] if i + 1 < len(lines) and not FRAME.match(lines[i + 1]) else ""
                )
                return "\n".join(line.strip() for line in (lines[i], source) if line.strip())
        return ""

    own = module and pick(lambda path: f"/{module}.py" in path or f"/{module}/" in path)
    return own or pick(lambda path: not any(part in path for part in LIBRARY))


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> SafeString | str:
    """The headline of a job text, scrubbed and shortened; its beginning as the tooltip."""
    if not text:
        return ""
    text = str(text)
    first = scrubbed(headline(text), limit + 1)
    if len(first) > limit:
        first = first[: limit - 1] + "…"
    return format_html('<span title="{}">{}</span>', scrubbed(text, TOOLTIP_CHARS), first)


def scrubbed(text: str, length: int) -> str:
    """At most ``length`` characters of ``text``, secrets hidden: cut first, then redacted.

    Redaction costs about a microsecond per character, and an error may be a 10,000-character
    traceback: a page of 100 of them took 0.6 s to redact whole. A secret cut short is still
    hidden (``redact_text`` matches a value up to where the text ends, quoted or not), and a
    key cut short leaves no value to hide.
    """
    return visible(redact_text(text[: length + REDACT_MARGIN]))[:length]


def instant(value: datetime | None, tz_name: str | None = None) -> SafeString | str:
    """An instant on one line, to the second in a schedule's zone, UTC in its tooltip.

    Without ``tz_name`` the instant is shown in Django's current zone (``TIME_ZONE``): the
    times of workers and other rows that belong to no schedule. The rule is ``timefmt``'s.
    """
    if value is None:
        return "-"
    tz = zone(tz_name) if tz_name else None
    return format_html(
        '<span class="cadence-time" title="{}">{}</span>',
        format_utc(value),
        format_instant(value, tz),
    )


def instant_column(
    field: str,
    description: str,
    zone_of: Callable[[Any], str] | None = None,
    ordering: str | None = None,
) -> Callable[[Any, Any], SafeString | str]:
    """A ModelAdmin column or read-only field showing ``obj.<field>`` by :func:`instant`, in
    the zone ``zone_of(obj)`` names (a schedule's), else in the current zone."""

    def column(model_admin: Any, obj: Any) -> SafeString | str:
        return instant(getattr(obj, field), zone_of(obj) if zone_of else None)

    column.short_description = description  # type: ignore[attr-defined]
    if ordering:
        column.admin_order_field = ordering  # type: ignore[attr-defined]
    return column


def duration(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return ""
    return _format_duration(end - start)


def _format_duration(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds < 60:
        return f"{seconds:.3g} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.utcoffset() is not None else None


def _history_row(entry: Any, tz_name: str | None) -> tuple[Any, ...]:
    """One try of ``Attempt.history`` as table cells; tolerant of any JSON shape."""
    if not isinstance(entry, dict):
        return ("?", "", "", "", "", "", text_block(json.dumps(redact(entry), default=str)))
    started, finished = _parse(entry.get("started_at")), _parse(entry.get("finished_at"))
    return (
        _cell(entry.get("try", "?")),
        _cell(entry.get("worker")),
        instant(started, tz_name) if started else _cell(entry.get("started_at")),
        instant(finished, tz_name) if finished else _cell(entry.get("finished_at")),
        duration(started, finished),
        _cell(entry.get("result")),
        error_block(str(entry.get("error"))) if entry.get("error") else "",
    )


def _cell(value: Any) -> str:
    """A short job-written value of a try (its worker, its result) as shown: redacted, visible."""
    return visible(redact_text(str(value))) if value not in (None, "") else ""


def _history_rows(entry: Any, tz_name: str | None) -> SafeString:
    """A try's row, and beneath it its error across the whole table (room for a traceback)."""
    *cells, error = _history_row(entry, tz_name)
    row = format_html(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", *cells
    )
    if not error:
        return row
    return format_html(
        '{}<tr class="cadence-try-error"><td></td><td colspan="5">{}</td></tr>', row, error
    )


def history_table(history: Iterable[Any] | None, tz_name: str | None = None) -> SafeString | str:
    """Every try of an attempt: number, worker, timing (in ``tz_name``), result, and its
    error on a row of its own."""
    entries = list(history or []) if isinstance(history, list) else []
    if not entries:
        return "No tries recorded yet."
    rows = format_html_join("", "{}", ((_history_rows(entry, tz_name),) for entry in entries))
    return format_html(
        '<table class="cadence-history"><thead><tr><th>Try</th><th>Worker</th>'
        "<th>Started</th><th>Finished</th><th>Took</th><th>Result</th>"
        "</tr></thead><tbody>{}</tbody></table>",
        rows,
    )
