"""What a request may ask of an admin page beyond viewing it: no probing of stored job data.

Django allows a URL to filter a changelist by any lookup on the model's own fields, so
``?payload__password__startswith=a`` answers with a row count and a view-only user recovers a
redacted secret letter by letter. Here a changelist accepts only the parameters its own list
filters and date hierarchy produce; anything else is refused as Django refuses a disallowed
lookup (``DisallowedModelAdminLookup``, a 400). A search is bounded before it runs, and an
action the user may not run is refused with a 403 rather than ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin import FieldListFilter
from django.contrib.admin.utils import get_fields_from_path
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from .search import terms

if TYPE_CHECKING:
    ModelAdmin = admin.ModelAdmin[Any]
else:
    ModelAdmin = admin.ModelAdmin

MAX_SEARCH_CHARS = 200
MAX_SEARCH_TERMS = 10
DATE_PARTS = ("year", "month", "day")


def filter_parameters(model_admin: ModelAdmin, request: HttpRequest) -> frozenset[str]:
    """The query parameters the page's list filters and date hierarchy can produce.

    Each filter is built as ``ChangeList.get_filters`` builds it, from no parameters, and
    asked for its ``expected_parameters()``: the filter classes themselves say what they use.
    """
    allowed: set[str] = set()
    if model_admin.date_hierarchy:
        allowed.update(f"{model_admin.date_hierarchy}__{part}" for part in DATE_PARTS)
    for list_filter in model_admin.get_list_filter(request):
        spec: Any
        if callable(list_filter):
            spec = list_filter(request, {}, model_admin.model, model_admin)
        else:
            field: Any = list_filter
            make: Any = FieldListFilter.create
            if isinstance(list_filter, tuple | list):
                field, make = list_filter
            path: Any = field if isinstance(field, str) else None
            if isinstance(field, str):
                field = get_fields_from_path(model_admin.model, field)[-1]
            spec = make(field, request, {}, model_admin.model, model_admin, field_path=path)
        allowed.update(p for p in spec.expected_parameters() if p)
    return frozenset(allowed)


def search_refusal(search_term: str) -> str:
    """Why a search is not run ("" when it is): the box is no tool for scanning at length."""
    if len(search_term) > MAX_SEARCH_CHARS:
        return f"The search is longer than {MAX_SEARCH_CHARS} characters; shorten it."
    if len(terms(search_term)) > MAX_SEARCH_TERMS:
        return f"The search has more than {MAX_SEARCH_TERMS} words; use fewer."
    return ""


class GuardedAdmin(ModelAdmin):
    """A ModelAdmin that answers only the lookups of its own filters, bounds its search and
    refuses with a 403 an action the user may not run."""

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        if request is None:  # Django always passes it from 5.0 on
            return False
        cache: dict[int, frozenset[str]] = request.__dict__.setdefault("_cadence_lookups", {})
        if id(self) not in cache:
            cache[id(self)] = filter_parameters(self, request)
        return lookup in cache[id(self)]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        if refusal := search_refusal(search_term):
            match = request.resolver_match
            if not match or match.url_name != "autocomplete":  # a page, not a JSON answer
                self.message_user(request, refusal, messages.ERROR)
            return queryset.none(), False
        return self.search(request, queryset, search_term)

    def search(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """The search itself, once it is known to be bounded: Django's by default."""
        return super().get_search_results(request, queryset, search_term)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        self.refuse_unavailable_action(request)
        return super().changelist_view(request, extra_context)

    def refuse_unavailable_action(self, request: HttpRequest) -> None:
        """An action the user may not run is a 403, not Django's "no action selected" (or,
        for a user with no action at all, the list again)."""
        name = request.POST.get("action", "") if request.method == "POST" else ""
        if name and name not in self.get_actions(request):
            raise PermissionDenied
