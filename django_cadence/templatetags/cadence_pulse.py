"""``{% cadence_pulse %}``: the warning banner of every Cadence admin page.

It shows :func:`~django_cadence.ops.health.fleet_reasons` (no live worker while work is due,
due work past its grace), the same reasons the health view reports; at most four indexed reads.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.db import DatabaseError
from django.urls import reverse

from ..ops.health import fleet_reasons

register = template.Library()


@register.inclusion_tag("django_cadence/admin/pulse.html", takes_context=True)
def cadence_pulse(context: template.Context) -> dict[str, Any]:
    """The reasons as of the page's *now* (``admin/now.py``): the banner and the page agree."""
    # Imported here, on an admin page: Django imports every tag library as its template engine
    # starts, and the admin package needs django.contrib.admin, which a project may leave out.
    from ..admin.now import engine_now, page_now

    request = context.get("request")
    try:
        reasons = fleet_reasons(page_now(request) if request is not None else engine_now())
    except DatabaseError:
        reasons = []  # the page itself says what is wrong with the database
    return {
        "reasons": reasons,
        "workers_url": reverse("admin:django_cadence_worker_changelist"),
    }
