"""The schedule actions: Run now (through the overlap policy or bypassing it), Pause and
Resume, on the changelist for a selection and on a schedule's own page.

Each is one call into ``services.py`` per schedule, checked against its permission
(``operations.py``) and recorded in the admin history, in one transaction per schedule; a bulk
action runs the same code as the button and names the schedules it left alone, and why.
"""

from __future__ import annotations

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


def _enabled(schedule: Schedule) -> bool:
    return schedule.enabled


def _paused(schedule: Schedule) -> bool:
    return not schedule.enabled


def _is_paused(schedule: Schedule) -> str:
    return "paused"


def _run_paused_instead(schedule: Schedule) -> str:
    return "paused: to run it once while it stays paused, use Run now on its page"


def _not_paused(schedule: Schedule) -> str:
    return "not paused"


RUN = ObjectAction(
    "run",
    "Run now",
    operations.RUN_SCHEDULE,
    _enabled,
    _run_now(force=False),
    why_not=_run_paused_instead,
)
RUN_PAUSED = ObjectAction(
    "run-paused",
    "Run now",
    operations.RUN_SCHEDULE,
    _paused,
    _run_now(force=False, even_if_paused=True),
    confirm=(
        "This schedule is paused. Run now makes one manual attempt of it now (through its "
        "overlap policy, with its retries); the schedule stays paused: nothing else runs "
        "until it is resumed."
    ),
    why_not=_not_paused,
)
FORCE_RUN = ObjectAction(
    "force-run",
    "Run now, bypassing overlap",
    operations.FORCE_RUN_SCHEDULE,
    _enabled,
    _run_now(force=True),
    why_not=_is_paused,
)
PAUSE = ObjectAction(
    "pause", "Pause", operations.PAUSE_SCHEDULE, _enabled, _pause, why_not=_is_paused
)
RESUME = ObjectAction(
    "resume", "Resume", operations.RESUME_SCHEDULE, _paused, _resume, why_not=_not_paused
)
SCHEDULE_ACTIONS = (RUN, FORCE_RUN, RUN_PAUSED, PAUSE, RESUME)


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
        self._run(request, queryset, RUN)

    @admin.action(description="Run now, bypassing the overlap policy", permissions=("force_run",))
    def run_now_forced(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._run(request, queryset, FORCE_RUN)

    def _run(self, request: HttpRequest, queryset: QuerySet, action: ObjectAction) -> None:
        levels, left = self._each(request, queryset, action)
        skipped = levels.count(messages.WARNING)  # recorded skipped by the overlap policy
        queued = len(levels) - skipped
        text = ngettext("%(count)d run queued.", "%(count)d runs queued.", queued)
        message = text % {"count": queued}
        if skipped:
            text = ngettext(
                "%(count)d was skipped by its overlap policy.",
                "%(count)d were skipped by their overlap policy.",
                skipped,
            )
            message += " " + text % {"count": skipped}
        self._report(request, message, left, warn=bool(skipped))

    @admin.action(description="Pause", permissions=("pause",))
    def pause(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, left = self._each(request, queryset, PAUSE)
        text = ngettext("%(count)d schedule paused.", "%(count)d schedules paused.", len(done))
        self._report(request, text % {"count": len(done)}, left)

    @admin.action(description="Resume", permissions=("resume",))
    def resume(self, request: HttpRequest, queryset: QuerySet) -> None:
        done, left = self._each(request, queryset, RESUME)
        text = ngettext("%(count)d schedule resumed.", "%(count)d schedules resumed.", len(done))
        self._report(request, text % {"count": len(done)}, left)

    def _each(
        self, request: HttpRequest, queryset: QuerySet, action: ObjectAction
    ) -> tuple[list[int], list[str]]:
        """``action`` on each selected schedule, as its button does it (one transaction each):
        the level of each one done, and "name (why)" for each one left alone."""
        done: list[int] = []
        left: list[str] = []
        for schedule in queryset:
            if not action.applies(schedule):
                left.append(f"“{schedule.name}” ({action.why_not(schedule)})")
                continue
            try:
                _message, level, _where = self.perform(request, action, schedule)
            except (CadenceError, ValidationError) as exc:
                why = "; ".join(getattr(exc, "messages", None) or [str(exc)])
                left.append(f"“{schedule.name}” ({why})")
                continue
            done.append(level)
        return done, left

    def _report(self, request: HttpRequest, done: str, left: list[str], warn: bool = False) -> None:
        """One message: what was done, then which schedules were left alone and why."""
        if left:
            done = f"{done} {len(left)} left alone: {'; '.join(left)}."
        self.message_user(request, done, messages.WARNING if left or warn else messages.SUCCESS)
