"""Each channel against a real receiver: the signed webhook (its retries after a 500 and a
timeout), Django's mail through a real SMTP server, a callable; the body's schema, and what
it never carries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_cadence.models import Delivery, DeliveryStatus, Event
from django_cadence.notify import outbox, signing
from tests import jobs
from tests.support.receivers import SECRET, webhook

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)
SCHEMA_KEYS = {
    "schema",
    "id",
    "event",
    "state",
    "episode",
    "schedule",
    "host",
    "at",
    "opened_at",
    "resolved_at",
    "count",
    "summary",
    "error",
    "attempt",
    "resolution",
    "metadata",
    "test",
}


def _dead_letter(engine, schedule_at, clock, **fields):
    fields = {"executor": "tests.jobs.raise_error", "max_attempts": 1, **fields}
    schedule = schedule_at(interval=MINUTE, **fields)
    clock.advance(MINUTE)
    engine.tick()
    return schedule


def test_a_webhook_answered_500_is_retried_with_backoff_until_200(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook, events=["dead_letter"])})
    hook.answers = [500]
    _dead_letter(engine, schedule_at, clock)

    (first,) = outbox.deliver_due(clock.now, "w")
    assert (first.ok, first.answer) == (False, "HTTP 500 from the webhook")
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.failures, delivery.last_error) == (
        DeliveryStatus.PENDING,
        1,
        "HTTP 500 from the webhook",
    )
    assert outbox.deliver_due(clock.now, "w") == []  # waits its backoff
    clock.advance(outbox.backoff(1))
    (second,) = outbox.deliver_due(clock.now, "w")

    assert second.ok
    delivery.refresh_from_db()
    assert (delivery.status, delivery.tries, delivery.failures) == (DeliveryStatus.SENT, 2, 1)
    first_body, second_body = hook.bodies()
    assert first_body == second_body  # the same message, the same id: a receiver dedupes on it
    assert not hook.refused


def test_a_webhook_that_times_out_is_retried(engine, schedule_at, clock, notify, hook):
    notify(channels={"hook": webhook(hook, events=["dead_letter"], timeout=0.3)})
    hook.answers, hook.hang_for = ["hang"], 1.0
    _dead_letter(engine, schedule_at, clock)

    (first,) = outbox.deliver_due(clock.now, "w")
    assert not first.ok
    assert "timed out" in first.answer
    clock.advance(outbox.backoff(1))
    (second,) = outbox.deliver_due(clock.now, "w")
    assert second.ok


def test_a_webhook_gives_up_after_its_tries(engine, schedule_at, clock, notify, hook):
    notify(channels={"hook": webhook(hook, events=["dead_letter"], tries=2)})
    hook.answers = [503, 503, 503]
    _dead_letter(engine, schedule_at, clock)

    outbox.deliver_due(clock.now, "w")
    clock.advance(outbox.backoff(1))
    outbox.deliver_due(clock.now, "w")
    clock.advance(outbox.RETRY_CAP)

    assert outbox.deliver_due(clock.now, "w") == []
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.tries, delivery.failures) == (DeliveryStatus.FAILED, 2, 2)


def test_the_signature_is_an_hmac_of_the_timestamp_and_body(
    engine, schedule_at, clock, notify, hook
):
    body = b'{"event":"dead_letter"}'
    header = signing.signature(SECRET, body, 1_767_225_600)

    assert signing.verify(SECRET, body, header, now=1_767_225_600) == 1_767_225_600
    with pytest.raises(signing.InvalidSignature, match="matches"):
        signing.verify(SECRET, body + b" ", header, now=1_767_225_600)
    with pytest.raises(signing.InvalidSignature, match="matches"):
        signing.verify("another-secret-entirely", body, header, now=1_767_225_600)
    with pytest.raises(signing.InvalidSignature, match="300 s"):
        signing.verify(SECRET, body, header, now=1_767_225_600 + 301)
    with pytest.raises(signing.InvalidSignature, match="timestamp"):
        signing.verify(SECRET, body, None)


def test_the_body_has_the_documented_schema_and_never_a_payload(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook, events=["dead_letter"])})
    schedule = _dead_letter(
        engine,
        schedule_at,
        clock,
        executor="tests.jobs.raise_error",
        payload={"message": "failed with password=hunter2 at https://ana:pw@db.example/x"},
        metadata={"team": "billing", "api_token": "tok-123"},
    )
    outbox.deliver_due(clock.now, "w")

    (body,) = hook.bodies()
    assert set(body) == SCHEMA_KEYS
    assert body["schema"] == 1
    assert body["schedule"] == schedule.name
    assert body["at"] == "2026-06-01T12:01:00Z"
    assert body["metadata"]["team"] == "billing"
    text = str(body)
    for secret in ("hunter2", "ana:pw", "tok-123"):
        assert secret not in text
    assert body["error"].startswith("RuntimeError: failed with password=")


@pytest.mark.filterwarnings("ignore:The EMAIL_[A-Z_]* setting is deprecated")  # Django 6.1: MAILERS
def test_mail_goes_through_djangos_smtp_backend_to_a_real_server(
    engine, schedule_at, clock, notify, smtp, settings
):
    settings.ADMINS = [("Ops", "ops@example.com")]
    settings.SERVER_EMAIL = "cadence@example.com"
    settings.EMAIL_SUBJECT_PREFIX = "[Django] "
    notify(channels={"ops": {"type": "mail", "events": ["dead_letter"]}})
    schedule = _dead_letter(engine, schedule_at, clock)

    (sent,) = outbox.deliver_due(clock.now, "w")

    assert sent.ok, sent.answer
    ((recipients, message),) = smtp.messages
    assert recipients == ["ops@example.com"]
    assert message["From"] == "cadence@example.com"
    assert message["Subject"] == f"[Django] {schedule.name}: an attempt was dead-lettered"
    text = message.get_payload()
    assert "error: RuntimeError: boom" in text
    assert f"schedule: {schedule.name}" in text
    assert message["Cadence-Message-Id"] == hook_id(Delivery.objects.get())


def hook_id(delivery: Delivery) -> str:
    return delivery.body["id"]


def test_mail_without_recipients_fails_and_says_why(engine, schedule_at, clock, notify, settings):
    settings.ADMINS = []
    notify(channels={"ops": {"type": "mail", "events": ["dead_letter"]}})
    _dead_letter(engine, schedule_at, clock)

    (sent,) = outbox.deliver_due(clock.now, "w")
    assert not sent.ok
    assert "ADMINS is empty" in sent.answer


def test_a_callable_channel_gets_the_body(engine, schedule_at, clock, notify):
    jobs.NOTIFIED.clear()
    notify(
        channels={
            "slack": {
                "type": "callable",
                "path": "tests.jobs.notify_into_list",
                "events": ["dead_letter"],
            }
        }
    )
    _dead_letter(engine, schedule_at, clock)
    outbox.deliver_due(clock.now, "w")

    ((message),) = jobs.NOTIFIED
    assert (message["event"], message["state"]) == (Event.DEAD_LETTER, "open")


def test_a_channel_removed_from_the_settings_fails_its_messages(
    engine, schedule_at, clock, notify, hook
):
    notify(channels={"hook": webhook(hook, events=["dead_letter"])})
    _dead_letter(engine, schedule_at, clock)
    notify(channels={})

    (sent,) = outbox.deliver_due(clock.now, "w")
    assert "no longer in CADENCE_NOTIFY" in sent.answer
    assert Delivery.objects.get().status == DeliveryStatus.FAILED
