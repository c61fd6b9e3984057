"""Real receivers for the notifications: an SMTP server (aiosmtpd) and an HTTP server that
verifies each webhook's signature, each on a port of its own on 127.0.0.1. The fixtures are
``hook`` in ``tests/conftest.py`` and ``smtp`` in ``tests/notify/conftest.py``."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django_cadence.notify import signing

SECRET = "a-shared-secret-of-some-length"


@dataclass
class Hook:
    """What the webhook receiver got: each request's verified body, in order. ``answers``
    says how it answers the next requests: a status code, or ``"hang"`` (no answer for
    ``hang_for`` seconds, then 200); once used up, 200."""

    url: str = ""
    answers: list[Any] = field(default_factory=list)
    hang_for: float = 1.5
    received: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # signatures that did not verify
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bodies(self, **match: Any) -> list[dict[str, Any]]:
        with self.lock:
            got = list(self.received)
        return [b for b in got if all(b.get(k) == v for k, v in match.items())]


def _handler(hook: Hook) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            try:
                signing.verify(SECRET, raw, self.headers.get(signing.HEADER))
            except signing.InvalidSignature as exc:
                with hook.lock:
                    hook.refused.append(str(exc))
                self._answer(400)
                return
            body = json.loads(raw)
            assert self.headers["Cadence-Message-Id"] == body["id"]
            with hook.lock:
                hook.received.append(body)
                answer = hook.answers.pop(0) if hook.answers else 200
            if answer == "hang":
                time.sleep(hook.hang_for)
                answer = 200
            self._answer(answer)

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def serve_hook() -> tuple[Hook, ThreadingHTTPServer]:
    """Start the webhook receiver; stop it with ``server.shutdown()``."""
    received = Hook()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(received))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    received.url = f"http://127.0.0.1:{server.server_address[1]}/cadence"
    return received, server


def webhook(hook: Hook, **options: Any) -> dict[str, Any]:
    """A webhook channel posting to ``hook``."""
    return {"type": "webhook", "url": hook.url, "secret": SECRET, "timeout": 2, **options}


@dataclass
class Mailbox:
    port: int = 0
    messages: list[Any] = field(default_factory=list)  # (recipients, email.message.Message)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_smtp() -> tuple[Mailbox, Any]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1; stop it with ``controller.stop()``."""
    from email import message_from_bytes

    from aiosmtpd.controller import Controller

    box = Mailbox(port=free_port())

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
            box.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
            return "250 OK"

    controller = Controller(Handler(), hostname="127.0.0.1", port=box.port)
    controller.start()
    return box, controller


def smtp_settings(box: Mailbox) -> dict[str, Any]:
    """Django's SMTP backend, pointed at ``box``."""
    return {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": box.port,
        "EMAIL_TIMEOUT": 5,
    }
