"""Overdue schedules with the fake clock: which are overdue, and ``schedule_overdue`` sent
once per overdue spell by the engine (docs/design.md, "Overdue schedules")."""

from datetime import timedelta

import pytest

import django_cadence
from django_cadence import signals
from django_cadence.engine.tuning import OVERDUE_PROBE
from django_cadence.models import Attempt, Schedule
from django_cadence.models.overdue import overdue, silences

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
LADDER = timedelta(seconds=10 + 20)  # CADENCE_MAX_ATTEMPTS 3, CADENCE_RETRY_BASE 10 s


@pytest.fixture
def sent():
    events = []

    def receiver(sender, **kwargs):
        kwargs.pop("signal", None)
        events.append(kwargs)

    signals.schedule_overdue.connect(receiver, weak=False)
    yield events
    signals.schedule_overdue.disconnect(receiver)


def _names(now):
    return [s.name for s in overdue(now)]


def test_a_schedule_that_never_succeeds_is_overdue_two_periods_and_its_retries_after_it_was_made(
    schedule_at, clock, engine
):
    start = clock.now()
    schedule_at(name="failing", executor="tests.jobs.raise_permanent", interval=MINUTE)
    for _ in range(2):
        engine.tick()
        clock.advance(MINUTE)
    assert _names(start + 2 * MINUTE + LADDER) == []
    assert _names(start + 2 * MINUTE + LADDER + timedelta(seconds=1)) == ["failing"]


def test_a_success_ends_the_silence_and_restarts_its_count(schedule_at, clock, engine):
    schedule = schedule_at(name="ok", interval=MINUTE)
    clock.advance(MINUTE)
    engine.tick()  # the first occurrence succeeds
    (state,) = silences(clock.now())
    assert state.last_success_at == clock.now()
    assert state.overdue_at == clock.now() + 2 * MINUTE + LADDER
    Schedule.objects.filter(pk=schedule.pk).update(executor="tests.jobs.raise_permanent")
    for _ in range(3):  # its next occurrences are planned on time, and fail
        clock.advance(MINUTE)
        engine.tick()
    assert _names(clock.now()) == ["ok"]


def test_max_silence_replaces_the_default_and_paused_schedules_are_never_overdue(
    schedule_at, clock
):
    start = clock.now()
    strict = schedule_at(name="strict", interval=MINUTE, max_silence=timedelta(seconds=30))
    schedule_at(name="lenient", interval=MINUTE)
    assert _names(start + timedelta(seconds=31)) == ["strict"]
    django_cadence.pause(strict, reason="maintenance")
    assert _names(start + timedelta(seconds=31)) == []


def test_the_engine_signals_each_overdue_spell_once(schedule_at, clock, engine, sent):
    schedule = schedule_at(name="quiet", executor="tests.jobs.raise_permanent", interval=MINUTE)
    for _ in range(4):
        clock.advance(MINUTE)
        engine.tick()
    assert [e["schedule"] for e in sent] == ["quiet"]
    assert sent[0]["last_success_at"] is None
    assert sent[0]["overdue_since"] == clock.now() - 4 * MINUTE + 2 * MINUTE + LADDER
    for _ in range(3):  # still overdue: no second signal, from this engine or another
        clock.advance(OVERDUE_PROBE)
        engine.tick()
    from django_cadence.engine.loop import Engine

    Engine(clock=clock, worker_id="worker-2", inline=True).tick()
    assert len(sent) == 1

    # It succeeds, then goes quiet again: a new spell, a new signal.
    Schedule.objects.filter(pk=schedule.pk).update(executor="tests.jobs.noop")
    clock.advance(MINUTE)
    engine.tick()
    succeeded = Attempt.objects.filter(schedule=schedule, status="succeeded").get()
    Schedule.objects.filter(pk=schedule.pk).update(executor="tests.jobs.raise_permanent")
    for _ in range(4):
        clock.advance(MINUTE)
        engine.tick()
    assert len(sent) == 2
    assert sent[1]["last_success_at"] == succeeded.finished_at


def test_max_silence_is_validated_like_the_other_durations(make_schedule):
    from django.core.exceptions import ValidationError

    schedule = Schedule(
        name="bad",
        kind="interval",
        interval=MINUTE,
        executor="tests.jobs.noop",
        max_silence=-MINUTE,
    )
    with pytest.raises(ValidationError) as error:
        schedule.full_clean()
    assert "max_silence" in error.value.message_dict
    schedule.max_silence = "90"  # seconds, as the other durations accept
    schedule.full_clean()
    assert schedule.max_silence == timedelta(seconds=90)


def test_the_probes_filter_finds_every_overdue_schedule_the_full_reading_finds(
    schedule_at, clock, engine
):
    """``may_be_overdue`` only spares the rule's arithmetic: across schedules that succeed,
    fail, never ran, were resumed, run a one-shot or say their ``max_silence``, and across
    the instants after, ``overdue()`` names exactly what reading every schedule would."""
    start = clock.now()
    schedule_at(name="ok", interval=MINUTE)
    schedule_at(name="failing", executor="tests.jobs.raise_permanent", interval=MINUTE)
    schedule_at(name="daily", kind="cron", interval=None, cron="0 3 * * *")
    schedule_at(name="quiet", interval=timedelta(hours=1), max_silence=2 * MINUTE)
    schedule_at(name="once-late", kind="once", interval=None, run_at=start - MINUTE)
    schedule_at(name="once-ahead", kind="once", interval=None, run_at=start + timedelta(days=2))
    flaky = schedule_at(name="flaky", interval=MINUTE)
    for step in range(12):
        if step == 4:
            Schedule.objects.filter(pk=flaky.pk).update(executor="tests.jobs.raise_permanent")
        if step == 6:
            django_cadence.pause(Schedule.objects.get(name="ok"), reason="a look")
        if step == 8:
            django_cadence.resume(Schedule.objects.get(name="ok"))
        engine.tick()
        for ahead in (timedelta(0), 3 * MINUTE, timedelta(hours=3), timedelta(days=3)):
            now = clock.now() + ahead
            every = [s.name for s in silences(now) if s.overdue]
            assert _names(now) == every, (step, ahead)
        clock.advance(MINUTE)
    assert _names(clock.now() + timedelta(days=3))  # the comparison saw overdue schedules


def test_a_schedule_made_before_the_first_engine_is_not_overdue_when_it_starts(
    schedule_at, clock, engine, sent
):
    """Seventy seconds between the schedule and the first engine: its first occurrences are
    planned late, at the start, so its silence counts from there; still failing two periods
    and its retries later, it is overdue then."""
    start = clock.now()
    schedule_at(name="early", executor="tests.jobs.raise_permanent", interval=15 * SECOND)
    clock.advance(seconds=70)
    engine.tick()  # plans the catch-up and runs it (every try fails), probes
    assert _names(clock.now()) == []
    assert sent == []
    first_planned_late = timedelta(seconds=70 - 15)
    nominal = start + 30 * SECOND + LADDER
    (state,) = silences(clock.now())
    assert state.overdue_at == nominal + first_planned_late
    clock.advance(state.overdue_at - clock.now())
    engine.tick()
    assert _names(clock.now()) == []
    clock.advance(seconds=1)
    assert _names(clock.now()) == ["early"]
    clock.advance(OVERDUE_PROBE)
    engine.tick()
    assert [e["schedule"] for e in sent] == ["early"]


def test_an_occurrence_not_planned_yet_makes_nothing_overdue(schedule_at, clock):
    """No engine has run it: the health checks say no worker runs, not that it is overdue."""
    schedule_at(name="waiting", interval=MINUTE)
    assert _names(clock.now() + timedelta(hours=5)) == []


def test_a_schedule_overdue_before_an_outage_stays_overdue_after_it(schedule_at, clock, engine):
    """Its first occurrence after its last success was planned on time and failed: the
    engines' absence later forgives nothing."""
    schedule_at(name="failing", executor="tests.jobs.raise_permanent", interval=MINUTE)
    for _ in range(4):
        clock.advance(MINUTE)
        engine.tick()
    assert _names(clock.now()) == ["failing"]
    clock.advance(minutes=10)  # no engine
    engine.tick()  # back: catches up, fails again
    assert _names(clock.now()) == ["failing"]
