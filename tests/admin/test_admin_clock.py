"""Every admin page reads the engine clock, once per request, never the web host's
(``admin/now.py``).

The engine clock here stands ten minutes behind the host's: a worker that beat 30 s ago by
the engine clock is live, and lost by the host's; a schedule due 5 s ago is within its grace,
and by the host's ten minutes past it. The overview, the workers page and the banner must
agree with the engine.
"""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

import django_cadence.clock
from django_cadence.admin import display
from django_cadence.models import Schedule, Worker
from django_cadence.testing import FakeClock

pytestmark = pytest.mark.django_db

BEHIND = timedelta(minutes=10)


@pytest.fixture
def engine_clock(monkeypatch, settings):
    settings.CADENCE_LEASE = 30
    settings.CADENCE_MAX_TICK = 10  # a worker is lost after 90 s without a heartbeat
    settings.CADENCE_MISFIRE_GRACE = 60
    clock = FakeClock(timezone.now() - BEHIND)
    reads = []

    def default_clock(using="default"):
        reads.append(using)
        return clock

    monkeypatch.setattr(django_cadence.clock, "default_clock", default_clock)
    clock.reads = reads
    return clock


@pytest.fixture
def worker(engine_clock):
    now = engine_clock.now()
    return Worker.objects.create(
        worker_id="w-1",
        host="h",
        pid=1,
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - timedelta(seconds=30),
        in_flight=0,
        concurrency=4,
    )


@pytest.fixture
def due(engine_clock, make_schedule):
    schedule = make_schedule(interval=timedelta(hours=1))
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=engine_clock.now() - timedelta(seconds=5)
    )
    return schedule


def html(client, url):
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_the_overview_the_workers_page_and_the_banner_agree_with_the_engine_clock(
    admin_client, engine_clock, worker, due
):
    overview = html(admin_client, reverse("admin:django_cadence_overview_changelist"))
    assert "Workers: 1 live, 0 lost" in overview
    assert f"As of {display.instant(engine_clock.now())}" in overview

    workers = reverse("admin:django_cadence_worker_changelist")
    assert 'class="cadence-worker-live"' in html(admin_client, workers)
    assert "w-1" in html(admin_client, f"{workers}?state=live")
    assert "w-1" not in html(admin_client, f"{workers}?state=lost")
    page = reverse("admin:django_cadence_worker_change", args=[worker.pk])
    assert 'class="cadence-worker-live"' in html(admin_client, page)

    schedules = reverse("admin:django_cadence_schedule_changelist")
    schedule = reverse("admin:django_cadence_schedule_change", args=[due.pk])
    for url in (reverse("admin:django_cadence_overview_changelist"), workers, schedules, schedule):
        assert "cadence-pulse" not in html(admin_client, url), url


def test_a_page_reads_the_engine_clock_once(admin_client, engine_clock, worker, due):
    html(admin_client, reverse("admin:index"))  # the sidebar's overview row: its own, cached
    engine_clock.reads.clear()
    html(admin_client, reverse("admin:django_cadence_worker_changelist") + "?state=live")
    assert len(engine_clock.reads) == 1  # the filter, the states, the banner
    engine_clock.reads.clear()
    html(admin_client, reverse("admin:django_cadence_schedule_change", args=[due.pk]))
    assert len(engine_clock.reads) == 1  # the silence, the banner


def test_the_preview_starts_an_unsaved_interval_at_the_engine_clock(admin_client, engine_clock):
    response = admin_client.get(
        reverse("admin:django_cadence_schedule_preview"),
        {"kind": "interval", "interval": "3600", "timezone": "UTC"},
    )
    first = response.json()["occurrences"][0]["utc"]
    expected = engine_clock.now() + timedelta(hours=1)
    assert first == expected.isoformat().replace("+00:00", "Z")
