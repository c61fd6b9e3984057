"""Admin actions, each declared once and run by one path from its button and its bulk form.

An ``ObjectAction`` says what an operation is: its permission, the states it applies to, and
``run``, the work on one object (one call into ``services.py``, recorded in the admin history).
Its button on an object's page is a small POST form (with its CSRF token) to
``<object>/do/<name>/``, shown only to users holding its permission and only in the states it
applies to; its bulk form (``Bulk``) is an entry of the changelist's action menu, made by
:func:`bulk_actions`. Both call :meth:`ObjectActionsAdmin.act`, which checks each object still
applies, runs it in a transaction of its own and says what happened in one message: the
object's own sentence on its page, a count on the list with the rows left alone and why. A
refused operation is a message, never a server error; an action with a ``confirm`` text asks
on a page of its own first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import path, reverse

from ..exceptions import CadenceError
from . import operations
from .guard import GuardedAdmin

NAMED = 10  # rows left alone named in a bulk action's message; the rest are counted
SHOWN = 100  # rows listed on a bulk action's confirmation page


@dataclass(frozen=True)
class Done:
    """What an action did to one object: the sentence its page shows, at what level (a
    ``messages`` constant), and where its page goes next ("" for the object's own page)."""

    message: str
    level: int = messages.SUCCESS
    where: str = ""


@dataclass(frozen=True)
class Left:
    """An object an action left alone, and why: not in a state it applies to, or refused."""

    obj: Any
    why: str
    refused: bool


@dataclass(frozen=True)
class Bulk:
    """An action's form on a changelist: its name and description in the action menu, and the
    count of what it did (``summary`` of each object's ``Done``: "3 schedules paused.").

    ``only`` is ``applies`` as a database filter: a selection (maybe every row of a big table)
    is narrowed before its rows are read, and those outside it are counted by ``outside``.
    ``confirm`` (given the number selected) is asked first, on a page listing the selection.
    """

    name: str
    description: str
    summary: Callable[[list[Done]], str]
    only: Q | None = None
    outside: Callable[[int], str] = lambda count: f"{count} left alone (not in this state)."
    confirm: Callable[[int], str] | None = None


@dataclass(frozen=True)
class ObjectAction:
    name: str  # the button's slug in ``<object>/do/<name>/``
    label: str
    permission: str  # a codename of operations.py
    applies: Callable[[Any], bool]
    run: Callable[[Any, HttpRequest, Any], Done]  # (model_admin, request, obj); raises to refuse
    confirm: str = ""  # asked on a page of its own before the button does it
    why_not: Callable[[Any], str] = lambda obj: "not in this state"  # when it does not apply
    bulk: Bulk | None = None  # its form on the changelists that list it (``bulk_actions``)


class BulkAction:
    """An ``ObjectAction``'s entry in Django's action menu: a named callable, as ``actions``
    takes them, that runs the action on the selection through ``act``."""

    def __init__(self, action: ObjectAction) -> None:
        if action.bulk is None:
            raise ValueError(f"The action {action.name!r} has no bulk form.")
        self.action, self.bulk = action, action.bulk
        self.__name__ = action.bulk.name
        self.short_description = action.bulk.description

    def __call__(self, model_admin: Any, request: HttpRequest, queryset: QuerySet) -> Any:
        return model_admin.act_on_selection(request, self.action, self.bulk, queryset)


def bulk_actions(*declared: ObjectAction) -> tuple[BulkAction, ...]:
    """A ModelAdmin's ``actions``: the bulk forms of the declared actions."""
    return tuple(BulkAction(action) for action in declared)


def why(exc: Exception) -> str:
    return "; ".join(getattr(exc, "messages", None) or [str(exc)])


class ObjectActionsAdmin(GuardedAdmin):
    """A ModelAdmin whose change page has ``object_actions`` (``change_form_template``) and
    whose changelist has ``actions = bulk_actions(...)``, both run by :meth:`act`."""

    object_actions: tuple[ObjectAction, ...] = ()
    change_form_template = "django_cadence/admin/change_form.html"

    # --- the one path ------------------------------------------------------------------------

    def act(
        self,
        request: HttpRequest,
        action: ObjectAction,
        objects: Iterable[Any],
        bulk: Bulk | None = None,
        outside: int = 0,
    ) -> str:
        """``action`` on each object, each in a transaction of its own (its work and its
        history entry, all or nothing, on Cadence's database and the admin's), then one
        message: the object's sentence from its page, a count from the list (its ``bulk``
        form). Returns where the object's page goes next ("" to stay)."""
        done: list[Done] = []
        left: list[Left] = []
        for obj in objects:
            if not action.applies(obj):
                left.append(Left(obj, action.why_not(obj), refused=False))
                continue
            try:
                with operations.all_or_nothing():
                    done.append(action.run(self, request, obj))
            except (CadenceError, ValidationError) as exc:
                left.append(Left(obj, why(exc), refused=True))
        if bulk is None:
            return self._report_one(request, action, done, left)
        self._report_many(request, bulk, done, left, outside)
        return ""

    def _report_one(
        self, request: HttpRequest, action: ObjectAction, done: list[Done], left: list[Left]
    ) -> str:
        for one in left:
            text = f"“{one.obj}”: {one.why}"
            if not one.refused:
                text = f"“{one.obj}”: {action.label} does not apply now ({one.why})."
            self.message_user(request, text, messages.ERROR)
        for did in done:
            self.message_user(request, did.message, did.level)
            return did.where
        return ""

    def _report_many(
        self, request: HttpRequest, bulk: Bulk, done: list[Done], left: list[Left], outside: int
    ) -> None:
        """What was done, then which rows were left alone and why (the first ``NAMED`` by
        name), then how many were outside the action's states."""
        text = bulk.summary(done)
        if left:
            named = "; ".join(f"“{one.obj}” ({one.why})" for one in left[:NAMED])
            more = f"; and {len(left) - NAMED} more" if len(left) > NAMED else ""
            text = f"{text} {len(left)} left alone: {named}{more}."
        if outside:
            text = f"{text} {bulk.outside(outside)}"
        warned = left or outside or any(did.level == messages.WARNING for did in done)
        self.message_user(request, text, messages.WARNING if warned else messages.SUCCESS)

    # --- the bulk form -----------------------------------------------------------------------

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        """Django's actions, less the bulk forms whose permission the user does not hold.

        ``action_location`` is Django 6.1's (where the actions are shown); Django 5.2 and 6.0
        pass none, and get none passed on."""
        if action_location is None:
            actions = super().get_actions(request)
        else:
            actions = super().get_actions(request, action_location=action_location)  # type: ignore[call-arg]
        for name, entry in list(actions.items()):
            # An ``Action`` with ``func`` on Django 6.1, a (func, name, description) tuple before.
            func = getattr(entry, "func", None) or (entry[0] if entry else None)
            if isinstance(func, BulkAction) and not operations.has_perm(
                request, func.action.permission
            ):
                del actions[name]
        return actions

    def act_on_selection(
        self, request: HttpRequest, action: ObjectAction, bulk: Bulk, queryset: QuerySet
    ) -> TemplateResponse | None:
        if bulk.confirm and request.POST.get("post") != "yes":
            return self.confirm_selection(request, action, bulk, queryset)
        outside = 0
        if bulk.only is not None:
            outside = queryset.exclude(bulk.only).count()
            queryset = queryset.filter(bulk.only)
        self.act(request, action, self.for_actions(queryset), bulk, outside)
        return None

    def for_actions(self, queryset: QuerySet) -> QuerySet:
        """The selected rows as an action reads them (with what their messages show)."""
        return queryset

    def selection_rows(self, queryset: QuerySet) -> list[Any]:
        """How each selected row is listed on a bulk action's confirmation page."""
        return [str(obj) for obj in queryset]

    def confirm_selection(
        self,
        request: HttpRequest,
        action: ObjectAction,
        bulk: Bulk,
        queryset: QuerySet,
    ) -> TemplateResponse:
        """Ask first, as Django's own delete action does, listing the selection."""
        ids = list(queryset.values_list("pk", flat=True))
        context = {
            **self.admin_site.each_context(request),
            "title": f"{action.label} {self.opts.verbose_name_plural}?",
            "opts": self.opts,
            "text": bulk.confirm(len(ids)) if bulk.confirm else "",
            "label": action.label,
            "action": bulk.name,
            "ids": ids,
            "shown": self.selection_rows(self.for_actions(queryset)[:SHOWN]),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(
            request, "django_cadence/admin/selection_confirmation.html", context
        )

    # --- the button --------------------------------------------------------------------------

    def available_actions(self, request: HttpRequest, obj: Any) -> list[ObjectAction]:
        return [
            action
            for action in self.object_actions
            if action.applies(obj) and operations.has_perm(request, action.permission)
        ]

    def get_urls(self) -> list[Any]:
        name = f"{self.opts.app_label}_{self.opts.model_name}_do"
        view = self.admin_site.admin_view(self.object_action_view)
        return [path("<path:object_id>/do/<slug:action>/", view, name=name), *super().get_urls()]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)
        buttons = []
        if obj is not None:
            do = f"admin:{self.opts.app_label}_{self.opts.model_name}_do"
            buttons = [
                {"name": a.name, "label": a.label, "url": reverse(do, args=[obj.pk, a.name])}
                for a in self.available_actions(request, obj)
            ]
        context = {
            **(extra_context or {}),
            **(self.page_context(obj) if obj is not None else {}),
            "cadence_actions": buttons,
        }
        return super().change_view(request, object_id, form_url, context)

    def page_context(self, obj: Any) -> dict[str, Any]:
        """More of the object page's context, from the object read once for its buttons."""
        return {}

    def object_action_view(self, request: HttpRequest, object_id: str, action: str) -> Any:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404("No such object.")
        chosen = {a.name: a for a in self.object_actions}.get(action)
        if chosen is None:
            raise Http404("No such action.")
        if not operations.has_perm(request, chosen.permission) or not self.has_view_permission(
            request, obj
        ):
            raise PermissionDenied
        page = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk])
        if chosen.confirm and chosen.applies(obj) and request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": f"{chosen.label}?",
                "opts": self.opts,
                "object": obj,
                "text": chosen.confirm,
                "label": chosen.label,
                "back": page,
            }
            return TemplateResponse(
                request, "django_cadence/admin/object_action_confirmation.html", context
            )
        return HttpResponseRedirect(self.act(request, chosen, [obj]) or page)
