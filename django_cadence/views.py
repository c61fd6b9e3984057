"""Views a project may include in its URLs; none is mounted unless the project does so.

``health`` answers 200 while the scheduler does its job and 503 with the reasons when it
does not (``ops/health.py``), for uptime monitors and container probes. It shows counts
and durations only, but says how your fleet is doing: protect it as your project protects
such endpoints (see docs/howto/alerting.md).
"""

from __future__ import annotations

from django.db import DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from .clock import default_clock
from .ops import health as checks


@never_cache
@require_GET
def health(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ok"}``, or 503 with the reasons; ``?level=critical`` answers 503 for
    critical reasons only (no live worker, backlog), leaving warnings to the body."""
    level = checks.CRITICAL if request.GET.get("level") == checks.CRITICAL else checks.WARNING
    try:
        body = checks.check(default_clock().now()).as_json(level=level)
    except DatabaseError:
        body = {
            "status": checks.CRITICAL,
            "reasons": [
                {"check": "database", "level": checks.CRITICAL, "message": "database unavailable"}
            ],
        }
    return JsonResponse(body, status=200 if body["status"] == checks.OK else 503)
