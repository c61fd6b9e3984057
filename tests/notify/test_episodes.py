"""Episodes open once, count the sightings after, and resolve once (docs/design.md,
"Notifications"), on the engine's fake clock, with a real webhook receiver."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_cadence import services
from django_cadence.engine import workers
from django_cadence.models import Delivery, Event, Notice, Schedule
from django_cadence.notify import clearing, outbox
from django_cadence.ops.watchdog import watch
from tests.support.receivers import webhook

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)


def _breaking(schedule_at, **fields):
    fields = {"executor": "tests.jobs.raise_error", "max_attempts": 1, **fields}
    return schedule_at(interval=MINUTE, **fields)


def _run(engine, clock, times: int = 1) -> None:
    for _ in range(times):
        clock.advance(MINUTE)
        engine.tick()


def _fix(schedule) -> None:
    Schedule.objects.filter(pk=schedule.pk).update(executor="tests.jobs.noop")


def _send(clock):
    return outbox.deliver_due(clock.now, "sender-1")


def test_dead_letters_make_one_episode_one_message_and_one_resolution(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook, events=["dead_letter"])})
    schedule = _breaking(schedule_at)

    _run(engine, clock, times=3)
    _send(clock)

    (notice,) = Notice.objects.filter(event=Event.DEAD_LETTER)
    assert (notice.event, notice.is_open, notice.count) == (Event.DEAD_LETTER, True, 3)
    assert "RuntimeError: boom" in notice.detail
    (opened,) = hook.bodies()
    assert (opened["event"], opened["state"], opened["schedule"]) == (
        "dead_letter",
        "open",
        schedule.name,
    )
    assert opened["episode"] == notice.pk
    assert opened["error"] == "RuntimeError: boom"
    assert clearing.resolve_cleared(clock.now()) == 0  # still failing

    _fix(schedule)
    _run(engine, clock)
    assert clearing.resolve_cleared(clock.now()) == 2  # the dead letters, and the overdue spell
    assert clearing.resolve_cleared(clock.now()) == 0  # resolved once
    _send(clock)
    _send(clock)

    assert [(b["event"], b["state"]) for b in hook.bodies()] == [
        ("dead_letter", "open"),
        ("dead_letter", "resolved"),
    ]
    resolved = hook.bodies(state="resolved")[0]
    assert resolved["count"] == 3
    assert resolved["resolution"] == "succeeded again"
    assert not Notice.objects.open().exists()  # its overdue spell ended with the success too
    assert not hook.refused


def test_the_next_breakage_after_a_resolution_is_a_new_episode(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook, events=["dead_letter"])})
    schedule = _breaking(schedule_at)
    _run(engine, clock)
    _fix(schedule)
    _run(engine, clock)
    clearing.resolve_cleared(clock.now())
    Schedule.objects.filter(pk=schedule.pk).update(executor="tests.jobs.raise_error")
    _run(engine, clock)
    _send(clock)

    episodes = [(b["episode"], b["state"]) for b in hook.bodies()]
    first, second = Notice.objects.filter(event=Event.DEAD_LETTER).order_by("opened_at")
    assert episodes == [(first.pk, "open"), (first.pk, "resolved"), (second.pk, "open")]


def test_failed_tries_in_a_row_open_a_failing_episode_before_any_dead_letter(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook, events=["failing"])}, failures=5)
    schedule = _breaking(
        schedule_at, max_attempts=10, retry_base=timedelta(seconds=1), notify_after_failures=3
    )

    _run(engine, clock, times=2)
    assert not Notice.objects.filter(event=Event.FAILING).exists()  # below the schedule's 3
    _run(engine, clock)
    _run(engine, clock)  # a fourth counts into the episode
    (notice,) = Notice.objects.filter(event=Event.FAILING)
    assert (notice.event, notice.count) == (Event.FAILING, 4)
    _send(clock)
    assert hook.bodies()[0]["summary"] == f"{schedule.name}: 3 failed tries in a row"

    _fix(schedule)
    _run(engine, clock)
    clearing.resolve_cleared(clock.now())
    _send(clock)
    assert [b["state"] for b in hook.bodies(event="failing")] == ["open", "resolved"]


def test_an_open_dead_letter_episode_keeps_failures_from_opening_another(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook)}, failures=1)
    _breaking(schedule_at, max_attempts=2, retry_base=timedelta(seconds=1))

    _run(engine, clock, times=4)  # fail (failing opens), dead letter, fail, dead letter

    events = sorted(Notice.objects.exclude(event=Event.OVERDUE).values_list("event", "count"))
    assert events == [(Event.DEAD_LETTER, 2), (Event.FAILING, 1)]


def test_an_auto_pause_opens_its_episode_and_the_resume_resolves_it(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook, events=["paused"])})
    schedule = _breaking(schedule_at, pause_after_failures=2)

    _run(engine, clock, times=2)
    (paused,) = Notice.objects.filter(event=Event.PAUSED)
    assert "auto-paused" in paused.detail
    assert Delivery.objects.count() == 1  # the channel takes paused only

    services.resume(schedule)
    assert clearing.resolve_cleared(clock.now()) == 1
    _send(clock)
    assert [(b["event"], b["state"]) for b in hook.bodies()] == [
        ("paused", "open"),
        ("paused", "resolved"),
    ]
    assert hook.bodies(state="resolved")[0]["resolution"] == "resumed"


def test_an_overdue_spell_is_one_episode(engine, schedule_at, clock, notify, hook):
    notify(channels={"hook": webhook(hook, events=["overdue"])})
    schedule = _breaking(schedule_at, max_silence=timedelta(minutes=3))

    _run(engine, clock, times=6)
    (notice,) = Notice.objects.filter(event=Event.OVERDUE)
    assert notice.is_open

    _fix(schedule)
    _run(engine, clock)
    clearing.resolve_cleared(clock.now())
    _send(clock)
    assert [b["state"] for b in hook.bodies()] == ["open", "resolved"]


def test_routing_by_metadata_by_name_and_off(engine, schedule_at, clock, notify, hook):
    hook_options = {"events": ["dead_letter"]}
    notify(
        channels={
            "billing": webhook(hook, metadata={"team": "billing"}, **hook_options),
            "all": webhook(hook, **hook_options),
        }
    )
    billing = _breaking(schedule_at, metadata={"team": "billing"})
    data = _breaking(schedule_at, metadata={"team": "data"})
    quiet = _breaking(schedule_at, notify="off")
    named = _breaking(schedule_at, metadata={"team": "data"}, notify="billing")

    _run(engine, clock)

    routed = {
        (d.notice.schedule.name, d.channel)
        for d in Delivery.objects.select_related("notice__schedule")
    }
    assert routed == {
        (billing.name, "billing"),
        (billing.name, "all"),
        (data.name, "all"),
        (named.name, "billing"),
    }
    assert Notice.objects.filter(schedule=quiet, is_open=True).exists()  # recorded, not sent


def test_no_live_worker_is_the_watchdogs_and_a_live_worker_resolves_it(
    make_schedule, clock, notify, hook
):
    from tests.support.attempts import make_due

    notify(channels={"hook": webhook(hook)})
    make_due(make_schedule(interval=MINUTE))
    now = Schedule.objects.get().next_run_at + MINUTE

    watch(lambda: now, "watchdog")
    watch(lambda: now, "watchdog")  # seen again: counted, not sent again
    (notice,) = Notice.objects.all()
    assert (notice.event, notice.count) == (Event.NO_WORKER, 2)
    assert [b["state"] for b in hook.bodies()] == ["open"]
    assert hook.bodies()[0]["schedule"] is None

    workers.register("back", now, concurrency=1)
    watch(lambda: now, "watchdog")
    assert [b["state"] for b in hook.bodies()] == ["open", "resolved"]


def test_a_deleted_schedule_resolves_its_episodes(engine, schedule_at, clock, notify, hook):
    notify(channels={"hook": webhook(hook, events=["dead_letter"])})
    schedule = _breaking(schedule_at)
    _run(engine, clock)
    schedule.delete()

    assert clearing.resolve_cleared(clock.now()) == 1
    _send(clock)
    assert hook.bodies(state="resolved")[0]["resolution"] == "the schedule was deleted"


def test_nothing_is_recorded_without_channels(engine, schedule_at, clock):
    _breaking(schedule_at)
    _run(engine, clock, times=2)
    assert not Notice.objects.exists()


def test_a_queue_no_live_worker_serves_is_an_episode_until_a_worker_serves_it(
    make_schedule, clock, notify, hook
):
    from django_cadence.engine import planner
    from tests.support.attempts import make_due

    notify(channels={"hook": webhook(hook)})
    make_due(make_schedule(interval=MINUTE, queue="reports"))
    now = Schedule.objects.get().next_run_at + MINUTE
    planner.plan_due(now)
    workers.register("billing", now, concurrency=1, queues="billing")

    watch(lambda: now, "watchdog")
    watch(lambda: now, "watchdog")  # seen again: counted, not sent again
    (notice,) = Notice.objects.all()
    assert (notice.event, notice.name, notice.count) == (Event.UNSERVED_QUEUE, "reports", 2)
    (opened,) = hook.bodies()
    assert opened["state"] == "open"
    assert opened["schedule"] is None

    workers.register("reports", now, concurrency=1, queues="reports:2")
    watch(lambda: now, "watchdog")
    assert [b["state"] for b in hook.bodies()] == ["open", "resolved"]
