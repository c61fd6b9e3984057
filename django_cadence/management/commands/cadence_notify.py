"""``manage.py cadence_notify [--test CHANNEL]``: the notifications' watchdog, for cron.

Without options, one pass (``ops/watchdog.py``): the ``no_worker`` episode opened when no
worker is alive while work is due, cleared episodes resolved, and what waits in the outbox
sent (the workers send it too; a claim keeps one sender per message). Run it every minute
beside the workers. ``--test CHANNEL`` sends one test message through that channel now.
"""

from __future__ import annotations

import socket
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_cadence import services
from django_cadence.clock import default_clock
from django_cadence.notify.channels import ChannelError
from django_cadence.ops.watchdog import watch


class Command(BaseCommand):
    help = (
        "Open the no-live-worker episode when no worker is alive while work is due, resolve "
        "what cleared, send waiting notifications; or send a test notification (--test)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--test",
            metavar="CHANNEL",
            default=None,
            help="Send a test notification through this CADENCE_NOTIFY channel, and exit.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["test"] is not None:
            try:
                answer = services.send_test_notification(options["test"])
            except (ChannelError, LookupError) as exc:
                raise CommandError(
                    f"test notification to {options['test']} failed: {exc}"
                ) from None
            self.stdout.write(f"test notification sent to {options['test']}: {answer}")
            return
        sent = watch(default_clock().now, f"cadence_notify@{socket.gethostname()}")
        failed = sum(1 for s in sent if not s.ok)
        self.stdout.write(f"{len(sent) - failed} notification(s) sent, {failed} failed")
