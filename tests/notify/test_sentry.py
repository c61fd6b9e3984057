"""Sentry Crons through sentry-sdk's own API: each schedule a monitor (its rule and time zone
in every check-in's configuration), each try an ``in_progress`` check-in closed by ``ok`` or
``error``. sentry-sdk runs for real, with a transport that records the envelopes."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sentry_sdk
from sentry_sdk.transport import Transport

from django_cadence.notify import sentry

pytestmark = pytest.mark.django_db


class Recorder(Transport):
    def __init__(self) -> None:
        super().__init__()
        self.envelopes: list = []

    def capture_envelope(self, envelope) -> None:
        self.envelopes.append(envelope)

    def check_ins(self) -> list[dict]:
        return [
            item.payload.json
            for envelope in self.envelopes
            for item in envelope.items
            if item.type == "check_in"
        ]


@pytest.fixture
def recorded(notify):
    notify(channels={"crons": {"type": "sentry", "margin": 2}})
    sentry.forget()
    transport = Recorder()
    sentry_sdk.init(dsn="https://public@sentry.invalid/1", transport=transport)
    yield transport
    sentry_sdk.init()  # a client that sends nothing
    sentry.forget()


def test_each_try_checks_in_to_its_schedules_monitor(engine, schedule_at, clock, recorded):
    schedule_at(
        name="Nightly export",
        kind="cron",
        cron="*/5 * * * *",
        interval=None,
        timezone="Europe/Vienna",
        max_runtime=timedelta(minutes=10),
        notify_after_failures=2,
    )
    clock.advance(timedelta(minutes=5))
    engine.tick()

    started, ended = recorded.check_ins()
    assert started["monitor_slug"] == "nightly-export"
    assert started["status"] == "in_progress"
    assert started["monitor_config"] == {
        "schedule": {"type": "crontab", "value": "*/5 * * * *"},
        "timezone": "Europe/Vienna",
        "checkin_margin": 2,
        "max_runtime": 10,
        "failure_issue_threshold": 2,
    }
    assert (ended["status"], ended["check_in_id"]) == ("ok", started["check_in_id"])


def test_a_failed_try_checks_in_an_error_and_intervals_are_in_sentrys_units(
    engine, schedule_at, clock, recorded
):
    schedule_at(
        name="hourly",
        interval=timedelta(hours=2),
        executor="tests.jobs.raise_error",
        max_attempts=1,
    )
    clock.advance(timedelta(hours=2))
    engine.tick()

    started, ended = recorded.check_ins()
    assert started["monitor_config"]["schedule"] == {"type": "interval", "value": 2, "unit": "hour"}
    assert ended["status"] == "error"


def test_a_schedule_that_opts_out_has_no_monitor(engine, schedule_at, clock, recorded):
    schedule_at(interval=timedelta(minutes=5), notify="off")
    clock.advance(timedelta(minutes=5))
    engine.tick()

    assert recorded.check_ins() == []


def test_without_a_sentry_channel_nothing_is_sent(engine, schedule_at, clock, recorded, notify):
    notify(channels={})
    schedule_at(interval=timedelta(minutes=5))
    clock.advance(timedelta(minutes=5))
    engine.tick()

    assert recorded.check_ins() == []
