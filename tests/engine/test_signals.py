"""Every state change sends its signal; the default receivers log one escaped line each."""

import logging
from datetime import timedelta

import pytest
from django.db import transaction

import django_cadence
from django_cadence import signals
from django_cadence.engine import leases, outcomes, planner
from django_cadence.models import Attempt

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


@pytest.fixture
def received():
    """Record (signal name, kwargs) of every cadence signal sent during the test."""
    events = []
    connected = []
    for name in (
        "attempt_started",
        "attempt_succeeded",
        "attempt_failed",
        "attempt_dead_lettered",
        "occurrence_skipped",
        "occurrence_missed",
        "schedule_paused",
    ):
        signal = getattr(signals, name)

        def receiver(sender, name=name, **kwargs):
            kwargs.pop("signal", None)
            events.append((name, kwargs))

        signal.connect(receiver, weak=False)
        connected.append((signal, receiver))
    yield events
    for signal, receiver in connected:
        signal.disconnect(receiver)


def names(events):
    return [name for name, _ in events]


def test_signals_success_path(engine, schedule_at, clock, received):
    schedule_at(name="ok", interval=MINUTE)
    clock.advance(MINUTE)
    engine.tick()
    assert names(received) == ["attempt_started", "attempt_succeeded"]
    started = received[0][1]
    assert started["schedule"] == "ok"
    assert started["try_number"] == 1
    assert started["worker"] == "worker-1"
    assert started["occurrence_at"] == clock.now()


def test_signals_failure_then_dead_letter(engine, schedule_at, clock, received):
    schedule_at(name="bad", executor="tests.jobs.raise_error", interval=MINUTE, max_attempts=2)
    clock.advance(MINUTE)
    engine.tick()
    retry = Attempt.objects.get()
    clock.set(retry.retry_at)
    engine.tick()
    assert names(received) == [
        "attempt_started",
        "attempt_failed",
        "attempt_started",
        "attempt_failed",
        "attempt_dead_lettered",
    ]
    assert received[1][1]["retry_at"] == retry.retry_at
    assert "RuntimeError: boom" in received[1][1]["error"]
    assert received[3][1]["retry_at"] is None
    assert "no tries left" in received[4][1]["reason"]


def test_signals_skipped_and_missed(schedule_at, clock, received):
    schedule = schedule_at(
        name="s",
        interval=MINUTE,
        overlap="skip_if_running",
        misfire="skip",
        misfire_grace=timedelta(seconds=30),
    )
    planner.plan_due(clock.advance(MINUTE))
    leases.claim(clock.now(), worker="w", slots=1)
    planner.plan_due(clock.advance(MINUTE))
    clock.advance(minutes=10)
    planner.plan_due(clock.now())
    kinds = names(received)
    assert kinds.count("occurrence_skipped") == 2  # the on-time one after the outage too
    missed = dict(received)["occurrence_missed"]
    assert missed["schedule"] == schedule.name
    assert missed["count"] == 9


def test_signals_schedule_paused_by_operator_and_by_auto_pause(
    schedule_at, clock, received, django_capture_on_commit_callbacks
):
    schedule = schedule_at(name="p", interval=MINUTE)
    with django_capture_on_commit_callbacks(execute=True):
        django_cadence.pause(schedule, reason="maintenance")
    assert received == [("schedule_paused", {"schedule": "p", "reason": "maintenance"})]
    received.clear()
    auto = schedule_at(name="a", interval=MINUTE, max_attempts=1, pause_after_failures=1)
    planner.plan_due(clock.advance(MINUTE))
    (claim,) = leases.claim(clock.now(), worker="w", slots=1)
    outcomes.record_failure(claim, "boom", clock.now())
    assert received[-1][0] == "schedule_paused"
    assert received[-1][1]["schedule"] == auto.name
    assert "auto-paused" in received[-1][1]["reason"]


def test_signals_default_receivers_log_one_escaped_line(engine, schedule_at, clock, caplog):
    caplog.set_level(logging.INFO, logger="django_cadence")
    schedule_at(
        name="evil",
        executor="tests.jobs.raise_error",
        payload={"message": "line1\nFAKE attempt succeeded id=1\x1b[31m"},
        interval=MINUTE,
        max_attempts=1,
    )
    clock.advance(MINUTE)
    engine.tick()
    events = [r.getMessage() for r in caplog.records if r.name == "django_cadence.events"]
    assert any(m.startswith("attempt started id=") for m in events)
    failed = next(m for m in events if m.startswith("attempt failed"))
    assert "\n" not in failed
    assert "\x1b" not in failed
    assert any(m.startswith("attempt dead_letter") for m in events)


# --- receivers that raise, and when an atomic job's success is heard ----------------------------


class NotifierTimedOut(Exception):
    pass


@pytest.fixture
def raising_receivers():
    """A notifier connected to every signal that times out (raises) each time it is called;
    returns the names of the signals it heard."""
    heard = []
    connected = []
    for name in (
        "attempt_started",
        "attempt_succeeded",
        "attempt_failed",
        "attempt_dead_lettered",
        "schedule_paused",
    ):
        signal = getattr(signals, name)

        def notify(sender, name=name, **kwargs):
            heard.append(name)
            raise NotifierTimedOut(f"slack timed out\nnotifying {name} token=xoxb-123")

        signal.connect(notify, weak=False)
        connected.append((signal, notify))
    yield heard
    for signal, notify in connected:
        signal.disconnect(notify)


def test_a_raising_receiver_is_logged_and_changes_nothing(
    engine, schedule_at, clock, raising_receivers, received, caplog
):
    caplog.set_level(logging.INFO, logger="django_cadence")
    ok = schedule_at(name="ok", interval=MINUTE)
    bad = schedule_at(
        name="bad",
        executor="tests.jobs.raise_error",
        interval=MINUTE,
        max_attempts=1,
        pause_after_failures=1,
    )
    clock.advance(MINUTE)
    engine.tick()

    assert Attempt.objects.get(schedule=ok).status == "succeeded"
    assert Attempt.objects.get(schedule=bad).status == "dead_letter"
    bad.refresh_from_db()
    assert not bad.enabled  # auto-paused, although the pause's receiver raised too
    assert sorted(set(raising_receivers)) == sorted(
        [
            "attempt_started",
            "attempt_succeeded",
            "attempt_failed",
            "attempt_dead_lettered",
            "schedule_paused",
        ]
    )
    # The other receivers (the default log lines and ``received``) still heard every signal.
    assert names(received).count("attempt_started") == 2
    assert "schedule_paused" in names(received)
    failures = [r for r in caplog.records if "signal receiver failed" in r.getMessage()]
    assert len(failures) == len(raising_receivers)
    for record in failures:
        message = record.getMessage()
        assert record.levelno == logging.ERROR
        assert "receiver=tests.engine.test_signals.raising_receivers.<locals>.notify" in message
        assert "Traceback (most recent call last):" in message  # the traceback, on one line
        assert "NotifierTimedOut: slack timed out\\nnotifying" in message
        assert "\n" not in message
        assert "xoxb-123" not in message  # redacted like every job-provided text


def test_a_raising_receiver_of_an_operator_pause_leaves_the_schedule_paused(
    schedule_at, raising_receivers, caplog, django_capture_on_commit_callbacks
):
    schedule = schedule_at(name="p", interval=MINUTE)
    with django_capture_on_commit_callbacks(execute=True):
        django_cadence.pause(schedule, reason="maintenance")
    schedule.refresh_from_db()
    assert not schedule.enabled
    assert raising_receivers == ["schedule_paused"]
    assert "signal receiver failed signal=schedule_paused" in caplog.text


class PauseUndone(Exception):
    """Raised inside the caller's transaction so that it rolls back."""


@pytest.mark.django_db(transaction=True)
def test_an_operator_pause_is_heard_after_its_commit_and_never_when_it_rolls_back(
    schedule_at, received
):
    kept = schedule_at(name="kept", interval=MINUTE)

    def pause_then_roll_back():
        with transaction.atomic():
            django_cadence.pause(kept, reason="undone")
            raise PauseUndone

    with pytest.raises(PauseUndone):
        pause_then_roll_back()
    kept.refresh_from_db()
    assert kept.enabled
    assert received == []  # nobody heard of a pause that never happened

    paused = schedule_at(name="paused", interval=MINUTE)
    with transaction.atomic():
        django_cadence.pause(paused, reason="maintenance")
        assert received == []  # not yet committed
    assert received == [("schedule_paused", {"schedule": "paused", "reason": "maintenance"})]


def test_a_pause_reason_is_redacted_bounded_and_storable(schedule_at):
    schedule = schedule_at(name="p", interval=MINUTE)
    django_cadence.pause(schedule, reason="rotating password=hunter2 \udcff\x00" + "x" * 5000)
    schedule.refresh_from_db()
    assert "hunter2" not in schedule.pause_reason
    assert "rotating password=" in schedule.pause_reason
    assert len(schedule.pause_reason) <= 1000
    schedule.pause_reason.encode("utf-8")


@pytest.mark.django_db(transaction=True)
def test_an_atomic_jobs_success_is_heard_after_its_commit(engine, schedule_at, clock):
    """signals.py promises every signal after the change is committed: an atomic job's
    success is written inside the job's own transaction, and heard once that commits."""
    from django.db import connection

    heard = []

    def on_success(sender, attempt_id, **kwargs):
        status = Attempt.objects.filter(pk=attempt_id).values_list("status", flat=True).get()
        heard.append((connection.in_atomic_block, status))

    signals.attempt_succeeded.connect(on_success, weak=False)
    try:
        schedule_at(name="atomic", executor="tests.jobs.atomic_noop", interval=MINUTE)
        clock.advance(MINUTE)
        engine.tick()
    finally:
        signals.attempt_succeeded.disconnect(on_success)
    assert heard == [(False, "succeeded")]
