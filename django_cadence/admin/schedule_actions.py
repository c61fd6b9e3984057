"""The schedule actions: Run now (through the overlap policy or bypassing it), Pause and
Resume, on the changelist for a selection and on a schedule's own page.

Each is one call into ``services.py`` per schedule, checked against its permission
(``operations.py``) and recorded in the admin history.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import ngettext

from .. import services
from ..exceptions import CadenceError
from ..models import Schedule, Status
from ..schedule.describe import zone
from ..schedule.timefmt import format_instant
from . import operations
from .object_actions import ObjectAction, ObjectActionsAdmin


def _run_now(force: bool, *, even_if_paused: bool = False) -> Any:
    def run(model_admin: Any, request: HttpRequest, schedule: Schedule) -> tuple[str, int, str]:
        attempt = services.trigger(schedule, force=force, even_if_paused=even_if_paused)
        how = "Ran now, bypassing the overlap policy" if force else "Ran now"
        if even_if_paused:
            how = "Ran once now while paused (the schedule stays paused)"
        model_admin.log_change(
            request, schedule, f"{how}: attempt {attempt.pk} is {attempt.status}."
        )
        url = reverse("admin:django_cadence_attempt_change", args=[attempt.pk])
        if attempt.status == Status.SKIPPED:
            policy = schedule.get_overlap_display()
            text = f"“{schedule.name}” was not run: its overlap policy ({policy}) skipped it."
            return text, messages.WARNING, ""
        stays = " It stays paused: nothing else runs until it is resumed." if even_if_paused else ""
        return f"“{schedule.name}” runs now: {attempt}.{stays}", messages.SUCCESS, url

    return run


def _pause(model_admin: Any, request: HttpRequest, schedule: Schedule) -> tuple[str, int, str]:
    reason = f"paused in the admin by {request.user.get_username()}"
    services.pause(schedule, reason=reason)
    model_admin.log_change(request, schedule, "Paused.")
    return f"“{schedule.name}” is paused: nothing runs until it is resumed.", messages.SUCCESS, ""


def _resume(model_admin: Any, request: HttpRequest, schedule: Schedule) -> tuple[str, int, str]:
    resumed = services.resume(schedule)
    model_admin.log_change(request, schedule, "Resumed.")
    when = format_instant(resumed.next_run_at, zone(resumed.timezone))
    return f"“{schedule.name}” is resumed; its next run is {when}.", messages.SUCCESS, ""


SCHEDULE_ACTIONS = (
    ObjectAction(
        "run", "Run now", operations.RUN_SCHEDULE, lambda s: s.enabled, _run_now(force=False)
    ),
    ObjectAction(
        "force-run",
        "Run now, bypassing overlap",
        operations.FORCE_RUN_SCHEDULE,
        lambda s: s.enabled,
        _run_now(force=True),
    ),
    ObjectAction(
        "run-paused",
        "Run now",
        operations.RUN_SCHEDULE,
        lambda s: not s.enabled,
        _run_now(force=False, even_if_paused=True),
        confirm=(
            "This schedule is paused. Run now makes one manual attempt of it now (through its "
            "overlap policy, with its retries); the schedule stays paused: nothing else runs "
            "until it is resumed."
        ),
    ),
    ObjectAction("pause", "Pause", operations.PAUSE_SCHEDULE, lambda s: s.enabled, _pause),
    ObjectAction("resume", "Resume", operations.RESUME_SCHEDULE, lambda s: not s.enabled, _resume),
)


class ScheduleActions(ObjectActionsAdmin):
    """The schedule admin's actions and the permissions that show them."""

    object_actions = SCHEDULE_ACTIONS
    actions = ("run_now", "run_now_forced", "pause", "resume")

    def has_run_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.RUN_SCHEDULE)

    def has_force_run_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.FORCE_RUN_SCHEDULE)

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.PAUSE_SCHEDULE)

    def has_resume_permission(self, request: HttpRequest) -> bool:
        return operations.has_perm(request, operations.RESUME_SCHEDULE)

    @admin.action(description="Run now (through the overlap policy)", permissions=("run",))
    def run_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._run(request, queryset, force=False)

    @admin.action(description="Run now, bypassing the overlap policy", permissions=("force_run",))
    def run_now_forced(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._run(request, queryset, force=True)

    def _run(self, request: HttpRequest, queryset: QuerySet, *, force: bool) -> None:
        outcomes: Counter[str] = Counter()
        for schedule in queryset:
            if not schedule.enabled:
                text = "is paused: to run it once while it stays paused, use Run now on its page."
                self.message_user(request, f"“{schedule.name}” {text}", messages.WARNING)
                continue
            attempt = services.trigger(schedule, force=force)
            outcomes[attempt.status] += 1
            how = "Ran now, bypassing the overlap policy" if force else "Ran now"
            self.log_change(request, schedule, f"{how}: attempt {attempt.pk} is {attempt.status}.")
        skipped = outcomes[Status.SKIPPED]
        queued = sum(outcomes.values()) - skipped
        text = ngettext("%(count)d run queued.", "%(count)d runs queued.", queued)
        message = text % {"count": queued}
        if skipped:
            text = ngettext(
                "%(count)d was skipped by its overlap policy.",
                "%(count)d were skipped by their overlap policy.",
                skipped,
            )
            message += " " + text % {"count": skipped}
        self.message_user(request, message, messages.WARNING if skipped else messages.SUCCESS)

    @admin.action(description="Pause", permissions=("pause",))
    def pause(self, request: HttpRequest, queryset: QuerySet) -> None:
        reason = f"paused in the admin by {request.user.get_username()}"
        done = self._each(
            request,
            queryset.filter(enabled=True),
            lambda schedule: services.pause(schedule, reason=reason),
            "Paused.",
        )
        message = ngettext("%(count)d schedule paused.", "%(count)d schedules paused.", done)
        self.message_user(request, message % {"count": done}, messages.SUCCESS)

    @admin.action(description="Resume", permissions=("resume",))
    def resume(self, request: HttpRequest, queryset: QuerySet) -> None:
        done = self._each(request, queryset.filter(enabled=False), services.resume, "Resumed.")
        message = ngettext("%(count)d schedule resumed.", "%(count)d schedules resumed.", done)
        self.message_user(request, message % {"count": done}, messages.SUCCESS)

    def _each(
        self,
        request: HttpRequest,
        queryset: QuerySet,
        operation: Callable[[Schedule], Any],
        log_message: str,
    ) -> int:
        """Apply ``operation`` to each schedule and log it; report the ones it refuses."""
        done = 0
        for schedule in queryset:
            try:
                operation(schedule)
            except (CadenceError, ValidationError) as exc:
                why = "; ".join(getattr(exc, "messages", None) or [str(exc)])
                self.message_user(request, f"{schedule.name}: {why}", messages.ERROR)
                continue
            self.log_change(request, schedule, log_message)
            done += 1
        return done
