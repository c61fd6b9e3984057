"""Send one message through one channel: mail (Django's email), a signed webhook, or a
callable. Each raises ``ChannelError`` with a redacted reason when the channel did not take
the message; the outbox retries it.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.core import mail
from django.utils.module_loading import import_string

from ..conf import Channel
from ..exceptions import CadenceError
from ..executors.redaction import clean_text
from . import messages, signing

USER_AGENT = "django-cadence-notify/1"
MESSAGE_HEADER = "Cadence-Message-Id"
ERROR_CHARS = 500


class ChannelError(CadenceError, RuntimeError):
    """The channel did not take the message."""


def send(channel: Channel, body: dict[str, Any]) -> str:
    """Send ``body`` through ``channel``; returns what the channel answered, in a few words."""
    try:
        if channel.type == "mail":
            return _mail(channel, body)
        if channel.type == "webhook":
            return _webhook(channel, body)
        if channel.type == "callable":
            import_string(channel.path)(dict(body))
            return "called"
        if channel.type == "sentry":
            from . import sentry

            return sentry.test_message(body)
    except ChannelError:
        raise
    except Exception as exc:
        raise ChannelError(clean_text(f"{type(exc).__name__}: {exc}", ERROR_CHARS)) from exc
    raise ChannelError(f"unknown channel type {channel.type!r}")


def recipients(channel: Channel) -> list[str]:
    """The channel's ``to``, else the addresses of ``ADMINS`` (tuples or strings)."""
    if channel.to:
        return list(channel.to)
    admins = getattr(settings, "ADMINS", []) or []
    return [a if isinstance(a, str) else a[1] for a in admins]


def _mail(channel: Channel, body: dict[str, Any]) -> str:
    """As ``mail_admins`` sends: ``EMAIL_SUBJECT_PREFIX`` before the subject, from
    ``SERVER_EMAIL``, through ``EMAIL_BACKEND`` (its ``EMAIL_TIMEOUT`` bounds the wait)."""
    to = recipients(channel)
    if not to:
        raise ChannelError("no recipients: the channel names no 'to' and ADMINS is empty")
    subject = f"{settings.EMAIL_SUBJECT_PREFIX}{body['summary']}".replace("\n", " ")[:250]
    message = mail.EmailMessage(
        subject,
        messages.as_text(body),
        settings.SERVER_EMAIL,
        to,
        headers={MESSAGE_HEADER: body["id"]},
    )
    message.send(fail_silently=False)
    return f"mailed to {len(to)} recipient(s)"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a success: the body and its signature go only to the URL
    configured."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _webhook(channel: Channel, body: dict[str, Any]) -> str:
    """POST the body as JSON, signed; any answer but 2xx within the timeout is a failure."""
    data = encode(body)
    request = urllib.request.Request(  # noqa: S310 - the URL's scheme is checked by conf/notify.py
        channel.url,
        data=data,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            MESSAGE_HEADER: body["id"],
            signing.HEADER: signing.signature(channel.secret, data, int(time.time())),
        },
    )
    try:
        with _opener.open(request, timeout=channel.timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        raise ChannelError(f"HTTP {exc.code} from the webhook") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ChannelError(clean_text(f"webhook unreachable: {reason}", ERROR_CHARS)) from None
    if not 200 <= status < 300:
        raise ChannelError(f"HTTP {status} from the webhook")
    return f"HTTP {status}"
