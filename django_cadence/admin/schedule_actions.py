"""The schedule actions: Run now (through the overlap policy or bypassing it), Pause and
Resume, on a schedule's own page and on the changelist for a selection.

Each is declared once (``object_actions.ObjectAction``): one call into ``services.py`` per
schedule, recorded in the admin history, in one transaction per schedule; its button and its
bulk form both run it through ``ObjectActionsAdmin.act``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import ngettext

from .. import services
from ..models import Schedule, Status
from ..schedule.describe import zone
from ..schedule.timefmt import format_instant
from . import operations
from .object_actions import Bulk, Done, ObjectAction, ObjectActionsAdmin, bulk_actions


def _run_now(force: bool, *, even_if_paused: bool = False) -> Any:
    def run(model_admin: Any, request: HttpRequest, schedule: Schedule) -> Done:
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
            return Done(text, messages.WARNING)
        stays = " It stays paused: nothing else runs until it is resumed." if even_if_paused else ""
        return Done(f"“{schedule.name}” runs now: {attempt}.{stays}", where=url)

    return run


def _pause(model_admin: Any, request: HttpRequest, schedule: Schedule) -> Done:
    reason = f"paused in the admin by {request.user.get_username()}"
    services.pause(schedule, reason=reason)
    model_admin.log_change(request, schedule, "Paused.")
    return Done(f"“{schedule.name}” is paused: nothing runs until it is resumed.")


def _resume(model_admin: Any, request: HttpRequest, schedule: Schedule) -> Done:
    resumed = services.resume(schedule)
    model_admin.log_change(request, schedule, "Resumed.")
    when = format_instant(resumed.next_run_at, zone(resumed.timezone))
    return Done(f"“{schedule.name}” is resumed; its next run is {when}.")


def _queued(done: list[Done]) -> str:
    """ "3 runs queued.", and how many the overlap policy skipped (recorded as warnings)."""
    skipped = sum(1 for did in done if did.level == messages.WARNING)
    queued = len(done) - skipped
    text = ngettext("%(count)d run queued.", "%(count)d runs queued.", queued)
    message = text % {"count": queued}
    if skipped:
        text = ngettext(
            "%(count)d was skipped by its overlap policy.",
            "%(count)d were skipped by their overlap policy.",
            skipped,
        )
        message += " " + text % {"count": skipped}
    return message


def _paused_count(done: list[Done]) -> str:
    text = ngettext("%(count)d schedule paused.", "%(count)d schedules paused.", len(done))
    return text % {"count": len(done)}


def _resumed_count(done: list[Done]) -> str:
    text = ngettext("%(count)d schedule resumed.", "%(count)d schedules resumed.", len(done))
    return text % {"count": len(done)}


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
    bulk=Bulk("run_now", "Run now (through the overlap policy)", _queued),
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
    bulk=Bulk("run_now_forced", "Run now, bypassing the overlap policy", _queued),
)
PAUSE = ObjectAction(
    "pause",
    "Pause",
    operations.PAUSE_SCHEDULE,
    _enabled,
    _pause,
    why_not=_is_paused,
    bulk=Bulk("pause", "Pause", _paused_count),
)
RESUME = ObjectAction(
    "resume",
    "Resume",
    operations.RESUME_SCHEDULE,
    _paused,
    _resume,
    why_not=_not_paused,
    bulk=Bulk("resume", "Resume", _resumed_count),
)


class ScheduleActions(ObjectActionsAdmin):
    """The schedule admin's actions: the buttons of a schedule's page, the bulk forms of the
    list (a paused schedule runs once only from its page, after a confirmation)."""

    object_actions = (RUN, FORCE_RUN, RUN_PAUSED, PAUSE, RESUME)
    actions = bulk_actions(RUN, FORCE_RUN, PAUSE, RESUME)
