"""The attempt actions: Retry and Discard a dead letter, Cancel a pending or running attempt,
Retry now a waiting retry; on an attempt's own page and on the changelists for a selection.

Each is declared once (``object_actions.ObjectAction``): one call into ``services.py`` (or
``operations.py``) per attempt, recorded in the admin history, in one transaction per
attempt; its button and its bulk form both run it through ``ObjectActionsAdmin.act``. A
selection is narrowed in the database to the states an action applies to, so a selection
of every row of a big table reads only the rows it acts on.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import ngettext

from .. import services
from ..models import Attempt, Status
from . import operations
from .object_actions import Bulk, Done, ObjectAction, ObjectActionsAdmin

ACTIVE = (Status.PENDING, Status.RUNNING)


def _retry(model_admin: Any, request: HttpRequest, attempt: Attempt) -> Done:
    retried = services.retry(attempt.pk)
    model_admin.log_change(request, retried, "Retried the dead letter.")
    page = reverse("admin:django_cadence_attempt_change", args=[attempt.pk])
    return Done(f"“{attempt}” is sent back to pending with fresh tries.", where=page)


def _discard(model_admin: Any, request: HttpRequest, attempt: Attempt) -> Done:
    if not operations.discard_dead_letters(request, [attempt.pk]):
        raise services.InvalidTransition("retried meanwhile: not a dead letter any more, kept")
    page = reverse("admin:django_cadence_deadletter_changelist")
    return Done(f"“{attempt}” is discarded; the admin history keeps its error.", where=page)


def _cancel(model_admin: Any, request: HttpRequest, attempt: Attempt) -> Done:
    cancelled = services.cancel(attempt.pk)
    page = reverse("admin:django_cadence_attempt_change", args=[attempt.pk])
    if cancelled.status == Status.CANCELLED:
        model_admin.log_change(request, cancelled, "Cancelled.")
        return Done(f"“{attempt}” is cancelled.", where=page)
    model_admin.log_change(request, cancelled, "Asked to stop.")
    return Done(f"“{attempt}” is asked to stop; it ends cancelled.", where=page)


def _retry_now(model_admin: Any, request: HttpRequest, attempt: Attempt) -> Done:
    if not services.retry_now([attempt.pk]):
        raise services.InvalidTransition("already due or running")
    model_admin.log_change(request, attempt, "Brought the retry forward to now.")
    return Done(f"“{attempt}”: its retry is brought forward to now.")


def _is_dead(attempt: Attempt) -> bool:
    return attempt.status == Status.DEAD_LETTER


def _is_active(attempt: Attempt) -> bool:
    return attempt.status in ACTIVE


def _is_waiting(attempt: Attempt) -> bool:
    return attempt.status == Status.PENDING and attempt.tries >= 1


def _counted(singular: str, plural: str) -> Any:
    def summary(done: list[Done]) -> str:
        return ngettext(singular, plural, len(done)) % {"count": len(done)}

    return summary


def _outside(singular: str, plural: str) -> Any:
    def outside(count: int) -> str:
        return ngettext(singular, plural, count) % {"count": count}

    return outside


RETRY = ObjectAction(
    "retry",
    "Retry",
    operations.RETRY_DEAD_LETTER,
    _is_dead,
    _retry,
    why_not=lambda attempt: "not a dead letter",
    bulk=Bulk(
        "retry_dead_letters",
        "Retry (dead letters only)",
        _counted(
            "%(count)d dead letter sent back to pending.",
            "%(count)d dead letters sent back to pending.",
        ),
        only=Q(status=Status.DEAD_LETTER),
        outside=_outside(
            "%(count)d was not a dead letter and was left alone.",
            "%(count)d were not dead letters and were left alone.",
        ),
    ),
)
DISCARD = ObjectAction(
    "discard",
    "Discard",
    operations.DISCARD_DEAD_LETTER,
    _is_dead,
    _discard,
    confirm=(
        "Discarding deletes this dead letter for good. It is recorded in the admin history "
        "first, with its schedule, occurrence and error; to run it again instead, retry it."
    ),
    why_not=lambda attempt: "not a dead letter",
    bulk=Bulk(
        "discard",
        "Discard (delete after recording it in the history)",
        _counted("%(count)d dead letter discarded.", "%(count)d dead letters discarded."),
        confirm=lambda count: (
            ngettext(
                "Discarding deletes %(count)d dead letter for good. ",
                "Discarding deletes %(count)d dead letters for good. ",
                count,
            )
            % {"count": count}
            + "Each is recorded in the admin history first, with its schedule, occurrence and "
            'error; to run one again instead, use "Retry".'
        ),
    ),
)
CANCEL = ObjectAction(
    "cancel",
    "Cancel",
    operations.CANCEL_ATTEMPT,
    _is_active,
    _cancel,
    why_not=lambda attempt: "already finished",
    bulk=Bulk(
        "cancel",
        "Cancel (pending or running)",
        _counted(
            "%(count)d attempt cancelled (or asked to stop).",
            "%(count)d attempts cancelled (or asked to stop).",
        ),
        only=Q(status__in=ACTIVE),
        outside=_outside(
            "%(count)d had already finished and was left alone.",
            "%(count)d had already finished and were left alone.",
        ),
    ),
)
# A bulk form only, on the retries list.
RETRY_NOW = ObjectAction(
    "retry-now",
    "Retry now",
    operations.RUN_RETRY_NOW,
    _is_waiting,
    _retry_now,
    why_not=lambda attempt: "not waiting for a retry",
    bulk=Bulk(
        "run_retries_now",
        "Retry now",
        _counted(
            "%(count)d retry brought forward to now.",
            "%(count)d retries brought forward to now.",
        ),
    ),
)


class AttemptActions(ObjectActionsAdmin):
    """The buttons of an attempt's page, whichever list it is reached from."""

    object_actions = (RETRY, DISCARD, CANCEL)

    def for_actions(self, queryset: QuerySet) -> QuerySet:
        """Their schedules (named in each message) in one more query, never a join."""
        return queryset.prefetch_related("schedule")
