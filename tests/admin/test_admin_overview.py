"""The overview page: the last 24 h in charts, the next 24 h, workers, dead letters."""

import re
from datetime import timedelta

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
    assert len(queries) <= 40  # a bounded number: 24 of them are the hourly start-lag samples


def test_the_admin_index_links_the_overview_with_the_dead_letters_of_24_hours(
    admin_client, make_schedule
):
    now = timezone.now()
    attempts(make_schedule(), now)
    html = admin_client.get(reverse("admin:index")).content.decode()
    assert f'href="{OVERVIEW}"' in html
    assert "Overview · 1 dead letter in 24 h" in html


@pytest.mark.parametrize(("codenames", "status"), [((), 403), (("view_attempt",), 200)])
def test_the_overview_needs_the_attempt_view_permission(operator, codenames, status):
    assert operator(*codenames).get(OVERVIEW).status_code == status
