"""A deadlock is not an outage: the server broke it by rolling one of the engine's transactions
back, and the tick runs again at once, without the outage's backoff, reconnect and distrust
(docs/design.md, "The engine").

The deadlocks here are real ones, made on the test database by two transactions that lock
two rows in opposite orders.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, connections, transaction

from django_cadence import store
from django_cadence.engine.loop import Engine
from django_cadence.models import Schedule

pytestmark = pytest.mark.django_db(transaction=True)
servers_only = pytest.mark.servers("row locks and deadlocks")
sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite store")


def a_real_deadlock() -> DatabaseError:
    """Two transactions lock two schedules in opposite orders; the server rolls one back."""
    rows = [
        Schedule.objects.create(
            name=f"deadlock-{i}",
            kind="interval",
            interval=timedelta(hours=1),
            executor="tests.jobs.noop",
        ).pk
        for i in range(2)
    ]
    both_hold_one = threading.Barrier(2, timeout=10)
    errors: list[DatabaseError] = []

    def lock_in_order(first: int, second: int) -> None:
        try:
            with transaction.atomic():
                Schedule.objects.select_for_update().get(pk=first)
                both_hold_one.wait()
                Schedule.objects.select_for_update().get(pk=second)
        except DatabaseError as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=lock_in_order, args=order) for order in (rows, rows[::-1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(errors) == 1, errors
    return errors[0]


@servers_only
def test_the_store_tells_a_deadlock_from_other_database_errors():
    deadlock = a_real_deadlock()
    assert store.of().lost_to_a_deadlock(deadlock)
    with pytest.raises(DatabaseError) as other, connection.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table")
    assert not store.of().lost_to_a_deadlock(other.value)


@sqlite_only
def test_sqlite_has_no_deadlock_to_tell():
    assert not store.of().lost_to_a_deadlock(DatabaseError("database is locked"))


@servers_only
def test_a_tick_that_lost_a_deadlock_runs_again_at_once_as_no_outage(clock, caplog, monkeypatch):
    deadlock = a_real_deadlock()
    engine = Engine(clock=clock, worker_id="worker-d", inline=True)
    stop = threading.Event()
    ticks: list[str] = []

    def tick() -> float:
        ticks.append("tick")
        if len(ticks) == 1:
            raise deadlock
        stop.set()
        return 60.0

    monkeypatch.setattr(engine, "tick", tick)
    disconnected: list[bool] = []
    monkeypatch.setattr(engine._lost_workers, "disconnected", lambda: disconnected.append(True))
    with caplog.at_level(logging.WARNING, logger="django_cadence"):
        engine._loop(stop, once=False)
    assert ticks == ["tick", "tick"]  # no backoff between them: the loop never waited
    assert disconnected == []  # nothing to distrust: the server never went away
    assert "database unavailable" not in caplog.text
    assert "deadlock" in caplog.text
    lines = [r for r in caplog.records if "deadlock" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.WARNING]


@servers_only
def test_a_drain_that_lost_a_deadlock_ticks_again_and_records_its_try(
    schedule_at, clock, threaded_engine, gate, caplog, monkeypatch
):
    deadlock = a_real_deadlock()
    engine = threaded_engine(concurrency=1)
    schedule = schedule_at(
        executor="tests.jobs.wait_at_gate", payload={"label": "d"}, interval=timedelta(hours=1)
    )
    clock.advance(hours=1)
    engine.tick()
    assert engine.in_flight == 1
    real_tick = engine.tick
    ticks: list[str] = []

    def tick() -> float:
        ticks.append("tick")
        if len(ticks) == 1:
            gate.set()  # the try finishes; the next tick records it
            raise deadlock
        return real_tick()

    monkeypatch.setattr(engine, "tick", tick)
    with caplog.at_level(logging.WARNING, logger="django_cadence"):
        engine._drain(grace=5)
    assert schedule.attempts.get().status == "succeeded"
    assert "database unavailable" not in caplog.text
    lines = [r for r in caplog.records if "deadlock" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.WARNING]
