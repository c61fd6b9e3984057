"""``Engine.run``'s start-up: what its caller asks to run once the engine holds its lock,
and nothing of ops unless asked (``run_cadence`` asks; docs/design.md, "Map of the code")."""

import logging
import threading

import pytest

from django_cadence.engine.loop import Engine
from django_cadence.models import Attempt, Schedule, Worker

pytestmark = pytest.mark.django_db


def test_on_start_runs_once_the_engine_started_and_before_it_registers_or_ticks(
    clock, schedule_at, caplog
):
    schedule_at(interval=None, kind="once", run_at=clock.now())
    engine = Engine(clock=clock, worker_id="w-start", inline=True)
    seen = []

    def on_start(started):
        lines = [r.getMessage() for r in caplog.records]
        seen.append(
            (
                started,
                any(line.startswith("engine started") for line in lines),
                Worker.objects.filter(worker_id="w-start").exists(),
                Attempt.objects.exists(),
            )
        )

    with caplog.at_level(logging.INFO, logger="django_cadence"):
        engine.run(threading.Event(), once=True, shutdown_grace=0, on_start=on_start)
    assert seen == [(engine, True, False, False)]
    assert Attempt.objects.get().status == "succeeded"  # and then it ran as ever


def test_an_engine_alone_applies_no_declared_schedules(settings, clock):
    settings.CADENCE_SCHEDULES = {"good": {"interval": 60, "executor": "tests.jobs.noop"}}
    Engine(clock=clock, inline=True).run(threading.Event(), once=True, shutdown_grace=0)
    assert not Schedule.objects.exists()
