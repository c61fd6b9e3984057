"""Searching attempts by schedule name and worker, at a million rows; schedules by name,
executor and metadata as shown.

What a search matches is only what the page shows, so the box is no oracle for what redaction
hides (its row count would otherwise reveal a secret letter by letter). Attempts are not
searched by error text: a term matching inside a redacted secret would find the row, and
checking each match against its redacted text would mean redacting every candidate's error.
A schedule's metadata is matched by the database first, then each candidate is kept only if
the term is in its metadata as shown, secrets redacted (schedules are few; their metadata is
small).

Two shapes of Django's default search are slow on a large table. Its join on the schedule
lets MariaDB plan from the schedules' side and sort every attempt (a minute at 10^6);
schedule names are matched here through a subquery of schedule ids instead. And a term
that matches few rows makes "the newest 100 matches" walk the whole ordered index, one row
lookup per entry; so the matches are first collected by one plain scan, and while there are
at most ``cap`` of them the page is read by primary key and sorted. Past ``cap`` matches
are common enough for the ordered index to find a page quickly.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.text import smart_split, unescape_string_literal

from ..executors.redaction import redact
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
    """Attempts whose schedule name or worker contains ``term`` (any case)."""
    names = Schedule.objects.filter(name__icontains=term).values("pk")
    return Q(schedule__in=names) | Q(worker__icontains=term)


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


def search_schedules(queryset: QuerySet[Any, Any], search_term: str) -> QuerySet[Any, Any]:
    """``queryset`` narrowed to the schedules whose name, executor or shown metadata contains
    every term of ``search_term`` (any case)."""
    for word in terms(search_term):
        candidates = Schedule.objects.filter(metadata__icontains=word).values_list("pk", "metadata")
        shown = [pk for pk, metadata in candidates if word.lower() in _shown(metadata).lower()]
        queryset = queryset.filter(
            Q(name__icontains=word) | Q(executor__icontains=word) | Q(pk__in=shown)
        )
    return queryset


def _shown(value: Any) -> str:
    """A JSON value as the admin shows it: secrets redacted."""
    return json.dumps(redact(value), ensure_ascii=False, default=str)
