"""Dead letters and retries: the two queues an operator works through after failures.

Both are proxies of ``Attempt`` with their own managers, so each has its own page,
permissions and actions while the rows stay attempts (their history is logged against the
attempt, so it survives a dead letter being retried).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import ngettext

from .. import services
from ..models import DeadLetter, Retry
from . import display, operations
from .attempts import AttemptAdmin

SHOWN = 100  # dead letters listed on the confirmation page


@admin.register(DeadLetter)
class DeadLetterAdmin(AttemptAdmin):
    list_display = ("occurrence", "schedule_name", "tries", "error_excerpt")
    list_filter = AttemptAdmin.list_filter[1:]  # all of them are dead letters
    # Newest first by occurrence, as the attempts page: the (status, occurrence_at) index
    # gives this order (the id tie-break is the index's row id on InnoDB, and PostgreSQL
    # sorts only the rows of one occurrence); by finished_at every dead letter was sorted.
    ordering = ("-occurrence_at", "-id")
    actions = ("retry_dead_letters", "discard")

    def has_discard_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.DISCARD_DEAD_LETTER)

    @admin.action(
        description="Discard (delete after recording it in the history)", permissions=("discard",)
    )
    def discard(self, request: HttpRequest, queryset: Any) -> TemplateResponse | None:
        """Ask for confirmation first, like Django's own delete action: a discard is final."""
        if request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": "Discard dead letters?",
                "opts": self.opts,
                "ids": list(queryset.values_list("pk", flat=True)),
                "shown": [
                    (
                        row.schedule.name,
                        display.instant(row.occurrence_at, row.schedule.timezone),
                        display.excerpt(row.error),
                    )
                    for row in queryset.prefetch_related("schedule")[:SHOWN]
                ],
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(
                request, "django_cadence/admin/discard_confirmation.html", context
            )
        selected = queryset.count()
        done = operations.discard_dead_letters(request, queryset.values_list("pk", flat=True))
        left = selected - done
        self._report(
            request,
            ngettext("%(count)d dead letter discarded.", "%(count)d dead letters discarded.", done)
            % {"count": done},
            ngettext(
                "%(count)d was retried meanwhile and kept.",
                "%(count)d were retried meanwhile and kept.",
                left,
            )
            % {"count": left},
            left,
        )
        return None


@admin.register(Retry)
class RetryAdmin(AttemptAdmin):
    list_display = ("occurrence", "schedule_name", "retry_when", "tries", "error_excerpt")
    list_filter = AttemptAdmin.list_filter[1:]  # all of them are pending
    ordering = ("retry_at", "id")
    actions = ("run_retries_now", "cancel")

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.RUN_RETRY_NOW)

    @admin.action(description="Retry now", permissions=("run_now",))
    def run_retries_now(self, request: HttpRequest, queryset: Any) -> None:
        selected = queryset.count()
        moved = services.retry_now(queryset.values_list("pk", flat=True))
        for attempt in moved:
            self.log_change(request, attempt, "Brought the retry forward to now.")
        done, left = len(moved), selected - len(moved)
        self._report(
            request,
            ngettext(
                "%(count)d retry brought forward to now.",
                "%(count)d retries brought forward to now.",
                done,
            )
            % {"count": done},
            ngettext(
                "%(count)d was already due or running.",
                "%(count)d were already due or running.",
                left,
            )
            % {"count": left},
            left,
        )
