"""The attempt actions: Retry and Discard a dead letter, Cancel a pending or running attempt,
on the changelists for a selection and on an attempt's own page.

Each is one call into ``services.py`` per attempt, checked against its permission
(``operations.py``) and recorded in the admin history, in one transaction per attempt; a bulk
action runs the same code as the button.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import ngettext

from .. import services
from ..models import Attempt, Status
from . import operations
from .object_actions import ObjectAction, ObjectActionsAdmin


def _retry(model_admin: Any, request: HttpRequest, attempt: Attempt) -> tuple[str, int, str]:
    retried = services.retry(attempt.pk)
    model_admin.log_change(request, retried, "Retried the dead letter.")
    page = reverse("admin:django_cadence_attempt_change", args=[attempt.pk])
    return f"“{attempt}” is sent back to pending with fresh tries.", messages.SUCCESS, page


def _discard(model_admin: Any, request: HttpRequest, attempt: Attempt) -> tuple[str, int, str]:
    if not operations.discard_dead_letters(request, [attempt.pk]):
        raise services.InvalidTransition("it is not a dead letter any more; it was kept.")
    page = reverse("admin:django_cadence_deadletter_changelist")
    return f"“{attempt}” is discarded; the admin history keeps its error.", messages.SUCCESS, page


def _cancel(model_admin: Any, request: HttpRequest, attempt: Attempt) -> tuple[str, int, str]:
    cancelled = services.cancel(attempt.pk)
    page = reverse("admin:django_cadence_attempt_change", args=[attempt.pk])
    if cancelled.status == Status.CANCELLED:
        model_admin.log_change(request, cancelled, "Cancelled.")
        return f"“{attempt}” is cancelled.", messages.SUCCESS, page
    model_admin.log_change(request, cancelled, "Asked to stop.")
    return f"“{attempt}” is asked to stop; it ends cancelled.", messages.SUCCESS, page


def _is_dead(attempt: Attempt) -> bool:
    return attempt.status == Status.DEAD_LETTER


ACTIVE = (Status.PENDING, Status.RUNNING)
RETRY = ObjectAction("retry", "Retry", operations.RETRY_DEAD_LETTER, _is_dead, _retry)
CANCEL = ObjectAction(
    "cancel", "Cancel", operations.CANCEL_ATTEMPT, lambda a: a.status in ACTIVE, _cancel
)
ATTEMPT_ACTIONS = (
    RETRY,
    ObjectAction(
        "discard",
        "Discard",
        operations.DISCARD_DEAD_LETTER,
        _is_dead,
        _discard,
        confirm=(
            "Discarding deletes this dead letter for good. It is recorded in the admin history "
            "first, with its schedule, occurrence and error; to run it again instead, retry it."
        ),
    ),
    CANCEL,
)


class AttemptActions(ObjectActionsAdmin):
    """The attempt admins' actions and the permissions that show them."""

    object_actions = ATTEMPT_ACTIONS

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.RETRY_DEAD_LETTER)

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.CANCEL_ATTEMPT)

    @admin.action(description="Retry (dead letters only)", permissions=("retry",))
    def retry_dead_letters(self, request: HttpRequest, queryset: Any) -> None:
        selected = queryset.count()
        done = self._each(request, queryset.filter(status=Status.DEAD_LETTER), RETRY)
        left = selected - done
        self._report(
            request,
            ngettext(
                "%(count)d dead letter sent back to pending.",
                "%(count)d dead letters sent back to pending.",
                done,
            )
            % {"count": done},
            ngettext(
                "%(count)d was not a dead letter and was left alone.",
                "%(count)d were not dead letters and were left alone.",
                left,
            )
            % {"count": left},
            left,
        )

    @admin.action(description="Cancel (pending or running)", permissions=("cancel",))
    def cancel(self, request: HttpRequest, queryset: Any) -> None:
        selected = queryset.count()
        done = self._each(request, queryset.filter(status__in=ACTIVE), CANCEL)
        left = selected - done
        self._report(
            request,
            ngettext(
                "%(count)d attempt cancelled (or asked to stop).",
                "%(count)d attempts cancelled (or asked to stop).",
                done,
            )
            % {"count": done},
            ngettext(
                "%(count)d had already finished and was left alone.",
                "%(count)d had already finished and were left alone.",
                left,
            )
            % {"count": left},
            left,
        )

    def _each(self, request: HttpRequest, queryset: Any, action: ObjectAction) -> int:
        """``action`` on each attempt, as its button does it (one transaction each); how many
        were done. One that changed state meanwhile is left alone."""
        done = 0
        for attempt in queryset.select_related("schedule"):
            try:
                self.perform(request, action, attempt)
            except services.InvalidTransition:
                continue  # retried, discarded or finished meanwhile
            done += 1
        return done

    def _report(self, request: HttpRequest, done: str, left: str, left_count: int) -> None:
        """One message: what was done, then (as a warning) how many rows were left alone."""
        if left_count:
            self.message_user(request, f"{done} {left}", messages.WARNING)
        else:
            self.message_user(request, done, messages.SUCCESS)
