"""``{% cadence_pulse %}``: the warning banner of every Cadence admin page.

It shows :func:`~django_cadence.ops.health.fleet_reasons` (no live worker while work is due,
due work past its grace), the same reasons the health view reports; at most four indexed reads.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.db import DatabaseError
from django.urls import reverse

from ..clock import default_clock
from ..ops.health import fleet_reasons

register = template.Library()


@register.inclusion_tag("django_cadence/admin/pulse.html")
def cadence_pulse() -> dict[str, Any]:
    try:
        reasons = fleet_reasons(default_clock().now())
    except DatabaseError:
        reasons = []  # the page itself says what is wrong with the database
    return {
        "reasons": reasons,
        "workers_url": reverse("admin:django_cadence_worker_changelist"),
    }
