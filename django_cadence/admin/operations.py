"""What the admin actions need besides ``services.py``: the permission each asks for, one
transaction for an action and its admin history entry, and discarding dead letters.

Each action is gated by its own permission (declared on the proxies in ``models/``).
Discarding is the one admin-only operation: it writes the admin history (``LogEntry``), which
``services.py`` knows nothing of.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from django.contrib.admin.models import DELETION, LogEntry
from django.db import router, transaction
from django.http import HttpRequest

from .. import store
from ..models import Attempt, Status
from ..schedule.describe import zone
from ..schedule.timefmt import format_instant
from . import display

APP = "django_cadence"

# The custom permissions, by the admin action they gate.
RUN_SCHEDULE = "run_schedule"
FORCE_RUN_SCHEDULE = "force_run_schedule"
PAUSE_SCHEDULE = "pause_schedule"
RESUME_SCHEDULE = "resume_schedule"
RETRY_DEAD_LETTER = "retry_deadletter"
DISCARD_DEAD_LETTER = "discard_deadletter"
RUN_RETRY_NOW = "run_retry_now"
CANCEL_ATTEMPT = "cancel_attempt"


def has_perm(request: HttpRequest, codename: str) -> bool:
    return request.user.has_perm(f"{APP}.{codename}")


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """A transaction on Cadence's database and, where the admin's history lives in another,
    one there too: an action and its ``LogEntry`` roll back together when either fails."""
    with (
        transaction.atomic(using=store.alias()),
        transaction.atomic(using=router.db_for_write(LogEntry)),
    ):
        yield


def discard_dead_letters(request: HttpRequest, ids: Iterable[int]) -> int:
    """Delete dead letters, each recorded first in the admin history with its error.

    The state machine of docs/design.md has no way out of ``dead_letter`` but "retry"; an
    operator who decides a dead letter should never run removes it, and the ``LogEntry``
    (schedule, occurrence, the scrubbed error) is what remains of it. Rows retried meanwhile
    are kept.
    """
    with all_or_nothing():
        rows = list(
            Attempt.objects.select_for_update()
            .filter(pk__in=list(ids), status=Status.DEAD_LETTER)
            .select_related("schedule")
        )
        for row in rows:
            LogEntry.objects.log_actions(  # type: ignore[call-overload]  # a list is a queryset here
                user_id=request.user.pk,
                queryset=[row],
                action_flag=DELETION,
                change_message=(
                    f"Discarded the dead letter of {row.schedule.name} at "
                    f"{format_instant(row.occurrence_at, zone(row.schedule.timezone))}: "
                    f"{display.scrubbed(row.error, 500)}"
                ),
                single_object=True,
            )
        Attempt.objects.filter(pk__in=[row.pk for row in rows]).discarded()
    return len(rows)
