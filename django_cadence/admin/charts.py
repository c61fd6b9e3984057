"""Small inline SVG charts drawn on the server: no script, no CDN, escaped like any HTML.

Each chart scales to its column (``viewBox`` and ``width: 100%``) and colours come from
``admin.css``. A chart is a picture with a name (``role="img"``) and a ``<title>`` per bar or
tick for the mouse; its figures follow it as a table, in a ``<details>`` that a keyboard opens
and a screen reader reads, with a caption and a header for each row and column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 480, 120, 34, 18, 8


def _n(value: float) -> str:
    """A coordinate or figure as SVG text (``format_html`` escapes, so no format specs)."""
    return f"{value:.1f}".removesuffix(".0")


def _frame(body: SafeString, label: str, height: int = HEIGHT) -> SafeString:
    return format_html(
        '<svg class="cadence-chart" viewBox="0 0 {} {}" role="img" aria-label="{}">{}</svg>',
        WIDTH,
        height,
        label,
        body,
    )


def _table(label: str, head: Sequence[str], rows: Iterable[Sequence[object]]) -> SafeString:
    """The figures of the chart named ``label``, closed under it: a row per bar or per
    schedule, its first cell the row's header."""
    body = format_html_join(
        "",
        '<tr><th scope="row">{}</th>{}</tr>',
        (
            (first, format_html_join("", "<td>{}</td>", ((cell,) for cell in rest)))
            for first, *rest in rows
        ),
    )
    return format_html(
        '<details class="cadence-figures"><summary>{}, as a table</summary>'
        "<table><caption>{}</caption><thead><tr>{}</tr></thead><tbody>{}</tbody></table>"
        "</details>",
        label,
        label,
        format_html_join("", '<th scope="col">{}</th>', ((name,) for name in head)),
        body,
    )


def _instants(titles: Iterable[str]) -> SafeString:
    """Instants separated by commas, each kept on one line."""
    return format_html_join(", ", '<span class="cadence-nowrap">{}</span>', ((t,) for t in titles))


def _seconds(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def _x_labels(labels: Sequence[str], step: float, every: int = 6) -> SafeString:
    return format_html_join(
        "",
        '<text class="cadence-axis" x="{}" y="{}">{}</text>',
        ((LEFT + i * step, HEIGHT - 4, label) for i, label in enumerate(labels) if i % every == 0),
    )


def _y_axis(top: float, unit: str = "") -> SafeString:
    return format_html(
        '<text class="cadence-axis" x="0" y="{}">{}{}</text>'
        '<text class="cadence-axis" x="0" y="{}">0</text>'
        '<line class="cadence-grid" x1="{}" y1="{}" x2="{}" y2="{}"/>',
        TOP + 8,
        f"{top:g}",
        unit,
        HEIGHT - BOTTOM,
        LEFT,
        HEIGHT - BOTTOM,
        WIDTH,
        HEIGHT - BOTTOM,
    )


def bars(
    values: Sequence[int], labels: Sequence[str], titles: Sequence[str], what: str, css: str
) -> SafeString:
    """One bar per value (an hour), ``labels[i]`` under every sixth, ``titles[i]`` and the
    figure on hover: "``what`` per hour"; then the table of ``titles[i]`` and the figure."""
    label = f"{what} per hour"
    top = max(values, default=0) or 1
    step = (WIDTH - LEFT) / max(len(values), 1)
    plot = HEIGHT - BOTTOM - TOP
    rects = format_html_join(
        "",
        '<rect class="{}" x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>',
        (
            (
                css,
                _n(LEFT + i * step + 1),
                _n(HEIGHT - BOTTOM - plot * value / top),
                _n(max(step - 2, 1)),
                _n(plot * value / top),
                titles[i],
                value,
            )
            for i, value in enumerate(values)
        ),
    )
    chart = _frame(format_html("{}{}{}", _y_axis(top), rects, _x_labels(labels, step)), label)
    table = _table(label, ("Hour from", what), zip(titles, values, strict=True))
    return format_html("{}{}", chart, table)


def lines(
    series: Sequence[tuple[str, Sequence[float | None]]],
    labels: Sequence[str],
    titles: Sequence[str],
    label: str,
) -> SafeString:
    """A line per named series (gaps where a value is None), seconds on the y axis; then the
    table of each hour (``titles[i]``) with a column of seconds per series."""
    known = [v for _, values in series for v in values if v is not None]
    top = max(known, default=0) or 1
    step = (WIDTH - LEFT) / max(len(labels), 1)
    plot = HEIGHT - BOTTOM - TOP

    def points(values: Sequence[float | None]) -> str:
        return " ".join(
            f"{LEFT + (i + 0.5) * step:.1f},{HEIGHT - BOTTOM - plot * v / top:.1f}"
            for i, v in enumerate(values)
            if v is not None
        )

    drawn = format_html_join(
        "",
        '<polyline class="cadence-line cadence-line-{}" points="{}"><title>{}</title></polyline>',
        ((n, points(values), name) for n, (name, values) in enumerate(series)),
    )
    body = format_html("{}{}{}", _y_axis(round(top, 2), " s"), drawn, _x_labels(labels, step))
    head = ("Hour from", *(f"{name} (s)" for name, _ in series))
    rows = (
        (title, *(_seconds(values[i]) for _, values in series)) for i, title in enumerate(titles)
    )
    return format_html("{}{}", _frame(body, label), _table(label, head, rows))


def timeline(
    rows: Sequence[tuple[str, Sequence[tuple[datetime, str]]]],
    start: datetime,
    end: datetime,
    labels: Sequence[tuple[datetime, str]],
) -> SafeString:
    """A row per schedule with a tick per due occurrence between ``start`` and ``end``; then
    the table of each schedule with its occurrences."""
    row_height, name_width = 18, 150
    height = TOP + row_height * max(len(rows), 1) + BOTTOM
    span = (end - start).total_seconds() or 1

    def x(at: datetime) -> float:
        return name_width + (WIDTH - name_width) * (at - start).total_seconds() / span

    parts = []
    for n, (name, ticks) in enumerate(rows):
        y = TOP + n * row_height
        parts.append(
            format_html(
                '<text class="cadence-axis" x="0" y="{}">{}</text>{}',
                y + 12,
                name if len(name) <= 22 else name[:21] + "…",
                format_html_join(
                    "",
                    '<rect class="cadence-tick" x="{}" y="{}" width="2" height="{}">'
                    "<title>{}</title></rect>",
                    ((_n(x(at)), y + 2, row_height - 4, f"{name}: {title}") for at, title in ticks),
                ),
            )
        )
    grid = format_html_join(
        "",
        '<line class="cadence-grid" x1="{}" y1="{}" x2="{}" y2="{}"/>'
        '<text class="cadence-axis" x="{}" y="{}">{}</text>',
        (
            (_n(x(at)), TOP, _n(x(at)), height - BOTTOM, _n(x(at) + 2), height - 4, text)
            for at, text in labels
        ),
    )
    body = format_html("{}{}", grid, format_html_join("", "{}", ((p,) for p in parts)))
    label = "Due occurrences in the next 24 hours"
    table = _table(
        label,
        ("Schedule", "Occurrences", "When"),
        ((name, len(ticks), _instants(title for _, title in ticks)) for name, ticks in rows),
    )
    return format_html("{}{}", _frame(body, label, height), table)
