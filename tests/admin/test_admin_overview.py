"""The overview page: the last 24 h in charts, the next 24 h, workers, dead letters."""

import re
from datetime import timedelta
from xml.etree import ElementTree

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from django_cadence.admin import overview
from django_cadence.models import Attempt, Worker

OVERVIEW = reverse("admin:django_cadence_overview_changelist")


def attempts(schedule, now):
    """Three hours of history: two firings an hour, one failure, one dead letter."""
    for hours_ago in (1, 2, 3):
        at = now - timedelta(hours=hours_ago)
        Attempt.objects.create(
            schedule=schedule,
            occurrence_at=at,
            status="succeeded",
            tries=1,
            started_at=at + timedelta(seconds=hours_ago),
            finished_at=at + timedelta(seconds=5),
        )
        Attempt.objects.create(
            schedule=schedule,
            occurrence_at=at + timedelta(minutes=1),
            status="dead_letter" if hours_ago == 1 else "succeeded",
            tries=1,
            error="Traceback (most recent call last):\nRuntimeError: boom"
            if hours_ago == 1
            else "",
            started_at=at + timedelta(minutes=1),
            finished_at=at + timedelta(minutes=1, seconds=1),
        )


def test_hourly_counts_bucket_firings_failures_and_dead_letters(make_schedule):
    now = timezone.now()
    attempts(make_schedule(), now)
    hours = overview.hour_starts(now)
    counts = overview.hourly_counts(hours)
    assert len(counts["firings"]) == 24
    assert sum(counts["firings"]) == 6
    assert sum(counts["failures"]) == 1
    assert sum(counts["dead"]) == 1


def test_start_lags_are_percentiles_per_hour(make_schedule):
    now = timezone.now()
    attempts(make_schedule(), now)
    lags = dict(overview.start_lags(overview.hour_starts(now)))
    known = [v for v in lags["p99"] if v is not None]
    assert len(known) in (3, 4)  # three hours of history, a minute may cross into the next
    assert max(known) <= 3.0


def test_the_overview_page_draws_its_charts_and_lists(admin_client, make_schedule):
    now = timezone.now()
    schedule = make_schedule(name="nightly")
    attempts(schedule, now)
    Worker.objects.create(worker_id="w-live", host="h", pid=1, started_at=now, heartbeat_at=now)
    Worker.objects.create(
        worker_id="w-lost", host="h", pid=2, started_at=now, heartbeat_at=now - timedelta(hours=2)
    )
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(OVERVIEW)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('<svg class="cadence-chart"') == 5  # 3 bar charts, lags, the timeline
    assert "Firings: 6" in html
    assert "Dead letters: 1" in html
    assert "Workers: 1 live, 1 lost" in html
    assert re.search(r"nightly · [-0-9: ]+ \w+ · dead letter", html)
    assert "RuntimeError: boom" in html
    assert "<script" not in html.split('id="content-main"')[1]
    assert "cdn" not in html.lower()
    # A bounded number: 24 of them are the hourly start-lag samples, up to 4 the queues' table.
    assert len(queries) <= 44


def test_the_admin_index_links_the_overview_with_the_dead_letters_of_24_hours(
    admin_client, make_schedule
):
    now = timezone.now()
    attempts(make_schedule(), now)
    html = admin_client.get(reverse("admin:index")).content.decode()
    assert f'href="{OVERVIEW}"' in html
    assert "Overview · 1 dead letter in 24 h" in html


def figures(html):
    """Each chart's table under it, by caption: its rows of cell texts, the header row first."""
    tables = {}
    for block in re.findall(r'<details class="cadence-figures">.*?</details>', html, re.S):
        table = ElementTree.fromstring(block).find("table")
        tables[table.find("caption").text] = [
            ["".join(cell.itertext()) for cell in row] for row in table.iter("tr")
        ]
    return tables


def drawn(html, label):
    """The tooltips of the chart named ``label``: what a mouse finds on its bars or ticks."""
    svg = re.search(rf'<svg [^>]*aria-label="{label}">(.*?)</svg>', html, re.S)[1]
    return re.findall(r"<title>(.*?)</title>", svg)


def test_each_chart_has_its_figures_in_a_table(admin_client, make_schedule):
    now = timezone.now()
    attempts(make_schedule(name="nightly", interval=timedelta(hours=2)), now)
    html = admin_client.get(OVERVIEW).content.decode()
    tables = figures(html)
    assert html.count('<svg class="cadence-chart"') == len(tables) == 5

    for label, column, total in (
        ("Firings per hour", "Firings", 6),
        ("Failures per hour", "Failures", 1),
        ("Dead letters per hour", "Dead letters", 1),
    ):
        head, *rows = tables[label]
        assert head == ["Hour from", column]
        assert len(rows) == 24
        assert sum(int(n) for _, n in rows) == total
        assert [f"{hour}: {n}" for hour, n in rows] == drawn(html, label)

    head, *rows = tables["Start lag per hour"]
    assert head == ["Hour from", "p50 (s)", "p95 (s)", "p99 (s)"]
    assert [hour for hour, *_ in rows] == [hour for hour, _ in tables["Firings per hour"][1:]]
    known = [row for row in rows if row[1] != "none"]
    assert len(known) in (3, 4)  # as in test_start_lags_are_percentiles_per_hour
    assert all(0 <= float(p50) <= float(p95) <= float(p99) <= 3 for _, p50, p95, p99 in known)

    head, *rows = tables["Due occurrences in the next 24 hours"]
    assert head == ["Schedule", "Occurrences", "When"]
    ticks = drawn(html, "Due occurrences in the next 24 hours")
    assert rows == [
        ["nightly", str(len(ticks)), ", ".join(t.removeprefix("nightly: ") for t in ticks)]
    ]
    assert 11 <= len(ticks) <= 12  # every two hours for 24 hours


@pytest.mark.parametrize(("codenames", "status"), [((), 403), (("view_attempt",), 200)])
def test_the_overview_needs_the_attempt_view_permission(operator, codenames, status):
    assert operator(*codenames).get(OVERVIEW).status_code == status
