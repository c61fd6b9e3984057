"""The workers admin: read-only, every worker with its state (live, lost or stopped)."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from django_cadence.models import Worker
from tests.support.workers import live_lost_stopped

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_cadence_worker_changelist")


@pytest.fixture
def workers(settings):
    settings.CADENCE_LEASE = 30
    settings.CADENCE_MAX_TICK = 10
    return live_lost_stopped(timezone.now(), in_flight=1)


def test_admin_workers_list_shows_each_state(admin_client, workers):
    page = admin_client.get(CHANGELIST).content.decode()
    assert '<span class="cadence-worker-live">live</span>' in page
    assert '<span class="cadence-worker-lost">lost</span>' in page
    assert '<span class="cadence-worker-stopped">stopped</span>' in page
    assert "1/4" in page


@pytest.mark.parametrize("state", ["live", "lost", "stopped"])
def test_admin_workers_filter_by_state(admin_client, workers, state):
    page = admin_client.get(CHANGELIST, {"state": state}).content.decode()
    shown = {worker_id for worker_id in workers if f">{worker_id}<" in page}
    assert shown == {f"w-{state}"}


def test_admin_workers_are_read_only(admin_client, workers):
    worker = workers["w-live"]
    assert admin_client.get(reverse("admin:django_cadence_worker_add")).status_code == 403
    change = reverse("admin:django_cadence_worker_change", args=[worker.pk])
    page = admin_client.get(change)
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    delete = reverse("admin:django_cadence_worker_delete", args=[worker.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert Worker.objects.filter(pk=worker.pk).exists()


def test_admin_workers_stopped_more_than_a_day_ago_are_left_out_by_default(admin_client, workers):
    now = timezone.now()
    Worker.objects.create(
        worker_id="w-long-gone",
        host="h1",
        pid=8,
        started_at=now - timedelta(days=3),
        heartbeat_at=now - timedelta(days=2),
        stopped_at=now - timedelta(days=2),
    )
    shown = admin_client.get(CHANGELIST).content.decode()
    assert "w-stopped" in shown
    assert "w-long-gone" not in shown
    assert "current (stopped in the last day)" in shown
    assert "w-long-gone" in admin_client.get(CHANGELIST, {"state": "all"}).content.decode()


def test_admin_workers_show_stuck_threads_and_since_when(admin_client, workers):
    from django_cadence.schedule.timefmt import format_utc

    since = timezone.now() - timedelta(minutes=3)
    Worker.objects.filter(worker_id="w-live").update(stuck_threads=2, stuck_since=since)
    page = admin_client.get(CHANGELIST).content.decode()
    row = next(r for r in page.split("<tr") if ">w-live<" in r)
    badge = f'<span class="cadence-badge cadence-stuck" title="since {format_utc(since)}">2 stuck'
    assert badge in row
    assert "stuck" not in next(r for r in page.split("<tr") if ">w-lost<" in r)
    detail = admin_client.get(
        reverse("admin:django_cadence_worker_change", args=[workers["w-live"].pk])
    ).content.decode()
    assert f"2 stuck since {format_utc(since)}" in detail
