"""The outbox: claim a due delivery, send it, record the answer (docs/design.md,
"Notifications").

A claim is a conditional update (due, and not claimed by a live claim) that writes a fresh
token and ``claim_until``: one sender at a time holds a delivery, and one that dies holding
it lets the claim lapse, after which another sends it. Every later write is fenced on the
token. A failed send is retried with backoff up to the channel's ``tries``, then the delivery
is ``failed``; each failure is counted on the row, with its redacted reason.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F

from ..conf import cadence_settings
from ..executors.log_text import log_value
from ..models import Delivery, DeliveryStatus
from . import channels

logger = logging.getLogger("django_cadence.notify")

RETRY_BASE = timedelta(seconds=5)
RETRY_CAP = timedelta(minutes=10)
CLAIM_SLACK = timedelta(seconds=5)  # beyond the channel's timeout
BATCH = 20


@dataclass(frozen=True)
class Sent:
    delivery_id: int
    channel: str
    ok: bool
    answer: str


def backoff(failures: int) -> timedelta:
    """5 s, 10 s, 20 s... at most 10 minutes: a receiver down for an hour still gets it."""
    return min(RETRY_CAP, RETRY_BASE * 2 ** max(0, failures - 1))


def deliver_due(clock: Callable[[], datetime], sender: str) -> list[Sent]:
    """Send every delivery due by now (a batch at most); what each send did."""
    due = Delivery.objects.due(clock()).order_by("next_try_at", "id").values_list("pk", flat=True)
    return [sent for pk in list(due[:BATCH]) if (sent := deliver(pk, clock, sender)) is not None]


def deliver(pk: int, clock: Callable[[], datetime], sender: str) -> Sent | None:
    """Claim, send and record one delivery; None when another sender holds it."""
    now = clock()
    delivery = Delivery.objects.filter(pk=pk).first()
    if delivery is None:
        return None
    channel = cadence_settings.NOTIFY.channel(delivery.channel)
    timeout = timedelta(seconds=channel.timeout) if channel else timedelta(0)
    token = uuid.uuid4().hex
    claimed = (
        Delivery.objects.due(now)
        .filter(pk=pk)
        .update(
            status=DeliveryStatus.SENDING,
            claim_token=token,
            claim_until=now + timeout + CLAIM_SLACK,
            sender=sender,
            tries=F("tries") + 1,
        )
    )
    if not claimed:
        return None
    if channel is None:
        return _failed(
            delivery, token, now, "the channel is no longer in CADENCE_NOTIFY", final=True
        )
    try:
        answer = channels.send(channel, delivery.body)
    except channels.ChannelError as exc:
        final = delivery.tries + 1 >= channel.tries
        return _failed(delivery, token, clock(), str(exc), final=final)
    fenced = Delivery.objects.filter(pk=pk, claim_token=token, status=DeliveryStatus.SENDING)
    fenced.update(status=DeliveryStatus.SENT, sent_at=clock(), last_error="", claim_until=None)
    logger.info(
        "notification sent id=%s channel=%s event=%s state=%s answer=%s",
        pk,
        log_value(delivery.channel),
        delivery.body.get("event"),
        delivery.state,
        log_value(answer),
    )
    return Sent(pk, delivery.channel, True, answer)


def _failed(delivery: Delivery, token: str, now: datetime, why: str, *, final: bool) -> Sent:
    failures = delivery.failures + 1
    fenced = Delivery.objects.filter(
        pk=delivery.pk, claim_token=token, status=DeliveryStatus.SENDING
    )
    fenced.update(
        status=DeliveryStatus.FAILED if final else DeliveryStatus.PENDING,
        failures=F("failures") + 1,
        next_try_at=now if final else now + backoff(failures),
        last_error=why,
        claim_until=None,
    )
    logger.log(
        logging.ERROR if final else logging.WARNING,
        "notification failed id=%s channel=%s tries=%s final=%s error=%s",
        delivery.pk,
        log_value(delivery.channel),
        delivery.tries + 1,
        final,
        log_value(why),
    )
    return Sent(delivery.pk, delivery.channel, False, why)
