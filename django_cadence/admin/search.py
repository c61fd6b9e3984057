"""Searching attempts by schedule name, error text and worker, at a million rows.

Two shapes of Django's default search are slow on a large table. Its join on the schedule
lets MariaDB plan from the schedules' side and sort every attempt (a minute at 10^6);
schedule names are matched here through a subquery of schedule ids instead. And a term
that matches few rows makes "the newest 100 matches" walk the whole ordered index, one row
lookup per entry; so the matches are first collected by one plain scan, and while there are
at most ``cap`` of them the page is read by primary key and sorted. Past ``cap`` matches
are common enough for the ordered index to find a page quickly.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.utils.text import smart_split, unescape_string_literal

from ..models import Schedule


def terms(search_term: str) -> list[str]:
    """The words of a search, a quoted phrase as one (as Django's admin splits them)."""
    found = []
    for bit in smart_split(search_term):
        if bit.startswith(('"', "'")) and bit[0] == bit[-1] and len(bit) > 1:
            bit = unescape_string_literal(bit)
        if bit:
            found.append(bit)
    return found


def matching(term: str) -> Q:
    """Attempts whose schedule name, error or worker contains ``term`` (any case)."""
    names = Schedule.objects.filter(name__icontains=term).values("pk")
    return Q(schedule__in=names) | Q(error__icontains=term) | Q(worker__icontains=term)


def search_attempts(queryset: QuerySet[Any, Any], search_term: str, cap: int) -> QuerySet[Any, Any]:
    """``queryset`` narrowed to the attempts matching every term of ``search_term``."""
    words = terms(search_term)
    if not words:
        return queryset
    matches = queryset
    for word in words:
        matches = matches.filter(matching(word))
    ids = list(matches.order_by().values_list("pk", flat=True)[: cap + 1])
    if len(ids) > cap:
        return matches
    return queryset.filter(pk__in=ids)
