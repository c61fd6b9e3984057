"""Prometheus metrics: the expected series, computed at scrape time, and no payload values."""

import sys
import urllib.request
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from prometheus_client import CollectorRegistry, generate_latest

from django_cadence import metrics
from django_cadence.engine import recovery
from django_cadence.models import Attempt, Worker
from tests.support.attempts import failed_on_time

pytestmark = pytest.mark.django_db

SECRET = "hunter2-do-not-export"
MARKER = "payload-marker-xyz"


@pytest.fixture
def registry(settings):
    settings.CADENCE_METRICS = True
    registry = CollectorRegistry()
    assert metrics.install(registry)
    yield registry
    metrics.uninstall(registry)


def scrape(registry):
    return generate_latest(registry).decode()


def test_metrics_series_after_runs_failures_and_a_recovery(registry, engine, schedule_at, clock):
    minute = timedelta(minutes=1)
    schedule_at(
        name="echo",
        executor="tests.jobs.echo",
        payload={"password": SECRET, "note": MARKER},
        interval=minute,
    )
    schedule_at(name="broken", executor="tests.jobs.raise_permanent", interval=minute)
    lost = schedule_at(name="lost", interval=timedelta(hours=1))
    clock.advance(minute)
    engine.tick()
    Attempt.objects.create(
        schedule=lost,
        occurrence_at=clock.now(),
        status="running",
        claim_token="t",
        lease_until=clock.now() - timedelta(minutes=5),
        tries=1,
    )
    recovery.recover_expired(clock.now())
    Worker.objects.create(
        worker_id="w", host="h", pid=1, started_at=clock.now(), heartbeat_at=clock.now()
    )
    text = scrape(registry)
    assert 'cadence_attempts{schedule="echo",status="succeeded"} 1.0' in text
    assert 'cadence_attempts{schedule="broken",status="dead_letter"} 1.0' in text
    assert 'cadence_attempts{schedule="lost",status="pending"} 1.0' in text
    assert 'cadence_firing_lag_seconds_count{schedule="echo"} 1.0' in text
    assert 'cadence_firing_lag_seconds_bucket{le="+Inf",schedule="broken"} 1.0' in text
    assert 'cadence_dead_letters_total{schedule="broken"} 1.0' in text
    assert 'cadence_lease_recoveries_total{schedule="lost"} 1.0' in text
    assert "cadence_queue_depth " in text
    assert "cadence_queue_oldest_seconds " in text
    assert 'cadence_workers{state="live"}' in text
    assert SECRET not in text
    assert MARKER not in text
    assert "password" not in text


def test_metrics_queue_depth_counts_ready_pending_attempts(registry, make_schedule):
    from django.utils import timezone

    schedule = make_schedule()
    now = timezone.now()
    for minutes in (1, 2):
        Attempt.objects.create(
            schedule=schedule,
            occurrence_at=now - timedelta(minutes=minutes),
            status="pending",
            retry_at=now - timedelta(minutes=minutes),
        )
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=now + timedelta(hours=1),
        status="pending",
        retry_at=now + timedelta(hours=1),
    )
    assert "cadence_queue_depth 2.0" in scrape(registry)


def test_metrics_off_by_default_is_a_no_op():
    registry = CollectorRegistry()
    assert metrics.install(registry) is False
    assert metrics.start_http_server(0, registry=registry) is None
    assert metrics.start_from_settings() is None
    assert scrape(registry) == ""


def test_metrics_enabled_without_prometheus_client_says_what_to_install(settings, monkeypatch):
    settings.CADENCE_METRICS = True
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(
        ImproperlyConfigured, match=r'pip install "django-cadence-scheduler\[metrics\]"'
    ):
        metrics.install(CollectorRegistry())


def test_metrics_disabled_without_prometheus_client_is_silent(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    assert metrics.install() is False


def test_metrics_start_http_server_needs_a_port(settings):
    settings.CADENCE_METRICS = True
    with pytest.raises(ImproperlyConfigured, match="CADENCE_METRICS_PORT"):
        metrics.start_http_server(registry=CollectorRegistry())


@pytest.mark.django_db(transaction=True)
def test_metrics_http_server_serves_the_series(settings, make_schedule):
    settings.CADENCE_METRICS = True
    registry = CollectorRegistry()
    make_schedule(name="served")
    server = metrics.start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        metrics.uninstall(registry)
    assert "cadence_queue_depth 0.0" in text
    assert 'cadence_workers{state="lost"} 0.0' in text


def test_metrics_last_success_and_overdue_per_schedule(registry, make_schedule):
    from django.utils import timezone

    now = timezone.now()
    minute = timedelta(minutes=1)
    healthy = make_schedule(name="healthy", interval=minute, created_at=now - 10 * minute)
    failed_on_time(make_schedule(name="silent", interval=minute, created_at=now - 10 * minute))
    make_schedule(name="paused", interval=minute, created_at=now - 10 * minute, enabled=False)
    finished = now - timedelta(seconds=5)
    Attempt.objects.create(
        schedule=healthy,
        occurrence_at=now - 2 * minute,
        status="succeeded",
        finished_at=finished,
    )
    text = scrape(registry)
    (line,) = [
        line
        for line in text.splitlines()
        if line.startswith('cadence_schedule_last_success_timestamp_seconds{schedule="healthy"}')
    ]
    assert float(line.split()[-1]) == pytest.approx(finished.timestamp(), abs=1e-3)
    assert 'cadence_schedule_last_success_timestamp_seconds{schedule="silent"}' not in text
    assert 'cadence_schedule_overdue{schedule="healthy"} 0.0' in text
    assert 'cadence_schedule_overdue{schedule="silent"} 1.0' in text
    assert 'schedule="paused"' not in text  # paused schedules are never overdue


def test_metrics_per_queue_ready_oldest_wait_and_workers_serving(registry, make_schedule):
    from django.utils import timezone

    from django_cadence.models import Worker

    now = timezone.now()
    for queue in ("billing", "reports"):
        schedule = make_schedule(queue=queue)
        Attempt.objects.create(
            schedule=schedule,
            occurrence_at=now - timedelta(minutes=2),
            status="pending",
            retry_at=now - timedelta(minutes=2),
        )
    make_schedule(queue="idle")
    for worker_id, queues in (("w-billing", "billing:2"), ("w-all", "")):
        Worker.objects.create(
            worker_id=worker_id, host="h", pid=1, started_at=now, heartbeat_at=now, queues=queues
        )
    text = scrape(registry)
    assert 'cadence_queue_ready{queue="billing"} 1.0' in text
    assert 'cadence_queue_ready{queue="idle"} 0.0' in text
    assert 'cadence_queue_workers{queue="billing"} 2.0' in text
    assert 'cadence_queue_workers{queue="reports"} 1.0' in text
    wait = next(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith('cadence_queue_oldest_wait_seconds{queue="reports"}')
    )
    assert wait >= 120
