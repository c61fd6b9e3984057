"""The fleet's pulse in the admin: a banner on every Cadence page when no worker shows a
heartbeat while work is due, or when due work waits past its grace; the overview's workers
with their load and stuck threads."""

from datetime import timedelta

import pytest
from django.db import connection
from django.template import Context
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from django_cadence.models import Attempt, Schedule, Worker
from tests.support.workers import worker_row

pytestmark = pytest.mark.django_db

NO_WORKER = 'data-check="no_worker"'
BACKLOG = 'data-check="backlog"'


@pytest.fixture(autouse=True)
def _timing(settings):
    settings.CADENCE_LEASE = 30
    settings.CADENCE_MAX_TICK = 10
    settings.CADENCE_MISFIRE_GRACE = 60


def _due(ago):
    schedule = Schedule.objects.create(
        name="nightly", kind="interval", interval=timedelta(hours=1), executor="tests.jobs.noop"
    )
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - ago)
    return schedule


def _worker(worker_id="w-live", *, stuck=0, in_flight=1):
    now = timezone.now()
    return worker_row(
        worker_id,
        heartbeat_at=now,
        in_flight=in_flight,
        concurrency=4,
        stuck_threads=stuck,
        stuck_since=now - timedelta(minutes=3) if stuck else None,
    )


def _pages(schedule):
    attempt = Attempt.objects.create(
        schedule=schedule, occurrence_at=timezone.now(), status="dead_letter", error="boom"
    )
    worker = Worker.objects.first()
    pages = [
        reverse("admin:app_list", args=["django_cadence"]),
        reverse("admin:django_cadence_overview_changelist"),
        reverse("admin:django_cadence_schedule_changelist"),
        reverse("admin:django_cadence_schedule_add"),
        reverse("admin:django_cadence_schedule_change", args=[schedule.pk]),
        reverse("admin:django_cadence_schedule_history", args=[schedule.pk]),
        reverse("admin:django_cadence_schedule_delete", args=[schedule.pk]),
        reverse("admin:django_cadence_attempt_changelist"),
        reverse("admin:django_cadence_attempt_change", args=[attempt.pk]),
        reverse("admin:django_cadence_deadletter_changelist"),
        reverse("admin:django_cadence_worker_changelist"),
    ]
    if worker:
        pages.append(reverse("admin:django_cadence_worker_change", args=[worker.pk]))
    return pages


def test_every_cadence_page_warns_when_no_worker_is_live_while_work_is_due(admin_client):
    schedule = _due(timedelta(seconds=5))
    for url in _pages(schedule):
        html = admin_client.get(url).content.decode()
        assert NO_WORKER in html, url
        assert (
            "no worker is running while work is due: none has registered (start run_cadence)"
            in html.lower()
        ), url
        assert BACKLOG not in html, url


def test_every_cadence_page_warns_of_a_backlog_past_its_grace(admin_client):
    _worker()
    schedule = _due(timedelta(minutes=5))
    for url in _pages(schedule):
        html = admin_client.get(url).content.decode()
        assert BACKLOG in html, url
        assert NO_WORKER not in html, url


def test_no_banner_while_the_fleet_is_healthy(admin_client):
    _worker()
    schedule = _due(timedelta(seconds=5))  # due, and within its grace
    for url in _pages(schedule):
        assert "cadence-pulse" not in admin_client.get(url).content.decode(), url


def test_the_banner_costs_four_reads_at_most_and_counts_nothing():
    from django_cadence.templatetags.cadence_pulse import cadence_pulse

    _due(timedelta(minutes=5))
    with CaptureQueriesContext(connection) as queries:
        reasons = cadence_pulse(Context())["reasons"]
    assert [r.check for r in reasons] == ["no_worker", "backlog"]
    reads = [q["sql"] for q in queries if "cadence_" in q["sql"]]  # not the server clock's
    assert len(reads) <= 4
    assert not any("COUNT(" in sql.upper() for sql in reads)


def test_the_overview_shows_live_workers_their_load_and_stuck_threads(admin_client):
    _worker("w-busy", in_flight=3)
    _worker("w-stuck", stuck=2, in_flight=0)
    html = admin_client.get(reverse("admin:django_cadence_overview_changelist")).content.decode()
    assert "Workers: 2 live, 0 lost" in html
    assert "load 3/4" in html
    assert "load 0/4" in html
    busy = next(row for row in html.split("<tr") if "w-busy" in row)
    assert "stuck" not in busy
    stuck = next(row for row in html.split("<tr") if "w-stuck" in row)
    assert '<span class="cadence-badge cadence-stuck"' in stuck
    assert "2 stuck</span>" in stuck
    assert "since <span" in stuck


def test_every_cadence_page_names_a_queue_no_live_worker_serves(admin_client):
    Worker.objects.filter(pk=_worker().pk).update(queues="billing")
    schedule = _due(timedelta(seconds=5))
    Schedule.objects.filter(pk=schedule.pk).update(queue="reports")
    now = timezone.now()
    Attempt.objects.create(schedule=schedule, occurrence_at=now, status="pending", retry_at=now)
    for url in _pages(schedule):
        html = admin_client.get(url).content.decode()
        assert 'data-check="unserved_queue"' in html, url
        assert "Due work waits in queue(s) reports that no live worker serves" in html, url
        assert NO_WORKER not in html, url
