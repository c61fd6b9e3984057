"""Small inline SVG charts drawn on the server: no script, no CDN, escaped like any HTML.

Each chart scales to its column (``viewBox`` and ``width: 100%``), carries a ``<title>`` per
bar or tick so hovering says the exact figure, and colours come from ``admin.css``.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    values: Sequence[int], labels: Sequence[str], titles: Sequence[str], label: str, css: str
) -> SafeString:
    """One bar per value (an hour), ``labels[i]`` under every sixth, ``titles[i]`` and the
    figure on hover."""
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
    return _frame(format_html("{}{}{}", _y_axis(top), rects, _x_labels(labels, step)), label)


def lines(
    series: Sequence[tuple[str, Sequence[float | None]]], labels: Sequence[str], label: str
) -> SafeString:
    """A line per named series (gaps where a value is None), seconds on the y axis."""
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
    return _frame(body, label)


def timeline(
    rows: Sequence[tuple[str, Sequence[tuple[datetime, str]]]],
    start: datetime,
    end: datetime,
    labels: Sequence[tuple[datetime, str]],
) -> SafeString:
    """A row per schedule with a tick per due occurrence between ``start`` and ``end``."""
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
    return _frame(body, "Due occurrences in the next 24 hours", height)
