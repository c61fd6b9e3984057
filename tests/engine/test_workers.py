"""Engines register themselves, renew their heartbeat and say when they stop."""

import threading
from datetime import timedelta

import pytest

from django_cadence.engine.loop import Engine
from django_cadence.models import Worker

pytestmark = pytest.mark.django_db


def test_workers_engine_registers_beats_and_stops(clock, schedule_at, settings):
    settings.CADENCE_LEASE = 3
    schedule_at(executor="tests.jobs.noop", interval=timedelta(hours=1))
    engine = Engine(clock=clock, worker_id="w-registry", inline=True)
    stop = threading.Event()
    engine.run(stop, once=True, shutdown_grace=0)
    worker = Worker.objects.get(worker_id="w-registry")
    assert worker.pid > 0
    assert worker.host
    assert worker.started_at == clock.now()
    assert worker.stopped_at == clock.now()


def test_workers_live_and_lost(clock):
    now = clock.now()
    Worker.objects.create(
        worker_id="live", host="h", pid=1, started_at=now, heartbeat_at=now - timedelta(seconds=5)
    )
    Worker.objects.create(
        worker_id="lost", host="h", pid=2, started_at=now, heartbeat_at=now - timedelta(minutes=5)
    )
    Worker.objects.create(
        worker_id="gone",
        host="h",
        pid=3,
        started_at=now,
        heartbeat_at=now - timedelta(minutes=5),
        stopped_at=now - timedelta(minutes=5),
    )
    timeout = timedelta(seconds=60)
    assert list(Worker.objects.live(now, timeout).values_list("worker_id", flat=True)) == ["live"]
    assert list(Worker.objects.lost(now, timeout).values_list("worker_id", flat=True)) == ["lost"]
