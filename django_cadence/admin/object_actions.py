"""Buttons on an object's own page: run a schedule now, pause it, retry a dead letter.

Each button is a small POST form (with its CSRF token) to ``<object>/do/<name>/``, shown only
to users holding its permission and only in the states it applies to. The view calls one
function in ``services.py`` (or ``operations.py``), records what it did in the admin history
(``LogEntry``) and says so in a message; a refused operation is an error message, never a
server error. An action with a ``confirm`` text asks on a page of its own first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
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

# ``run(model_admin, request, obj)`` says what happened: the message, its level (a
# ``messages`` constant) and where to go next ("" for the object's page).
Run = Callable[[Any, HttpRequest, Any], tuple[str, int, str]]


@dataclass(frozen=True)
class ObjectAction:
    name: str
    label: str
    permission: str  # a codename of operations.py
    applies: Callable[[Any], bool]
    run: Run
    confirm: str = ""  # asked on a page of its own before doing it
    why_not: Callable[[Any], str] = lambda obj: "not in this state"  # when it does not apply


class ObjectActionsAdmin(GuardedAdmin):
    """A ModelAdmin whose change page has ``object_actions`` (``change_form_template``)."""

    object_actions: tuple[ObjectAction, ...] = ()
    change_form_template = "django_cadence/admin/change_form.html"

    def available_actions(self, request: HttpRequest, obj: Any) -> list[ObjectAction]:
        return [
            action
            for action in self.object_actions
            if action.applies(obj) and operations.has_perm(request, action.permission)
        ]

    def perform(self, request: HttpRequest, action: ObjectAction, obj: Any) -> tuple[str, int, str]:
        """Run ``action`` on ``obj`` and record it, all or nothing: the one path of both its
        button and its bulk action. Raises ``CadenceError`` or ``ValidationError`` to refuse."""
        with operations.all_or_nothing():
            return action.run(self, request, obj)

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
        if not chosen.applies(obj):
            why = chosen.why_not(obj)
            text = f"“{obj}”: {chosen.label} does not apply now ({why})."
            self.message_user(request, text, messages.ERROR)
            return HttpResponseRedirect(page)
        if chosen.confirm and request.POST.get("post") != "yes":
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
        try:
            message, level, where = self.perform(request, chosen, obj)
        except (CadenceError, ValidationError) as exc:
            why = "; ".join(getattr(exc, "messages", None) or [str(exc)])
            self.message_user(request, f"“{obj}”: {why}", messages.ERROR)
            return HttpResponseRedirect(page)
        self.message_user(request, message, level)
        return HttpResponseRedirect(where or page)
