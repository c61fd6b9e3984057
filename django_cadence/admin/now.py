"""*Now* for the admin: the engine clock, read once per request.

Every admin page, its warning banner and the preview read the engine clock (``clock.py``: the
database server's on PostgreSQL and MariaDB), never the web host's, and read it once: the
overview, the workers page and the banner then agree on which worker is lost whichever web
host draws them, and every figure of a page is of one instant.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import router
from django.http import HttpRequest

from .. import clock
from ..models import Attempt

_READ = "_cadence_now"  # where a request keeps its reading, and an object its page's


def engine_now() -> datetime:
    """One reading of the engine clock of the database the admin reads."""
    return clock.default_clock(router.db_for_read(Attempt)).now()


def page_now(request: HttpRequest) -> datetime:
    """The engine clock as of this request: read on first use, the same instant after."""
    now = getattr(request, _READ, None)
    if now is None:
        now = engine_now()
        setattr(request, _READ, now)
    return now


def stamp(obj: Any, request: HttpRequest) -> None:
    """Keep the request's *now* on the object of its page, for the columns that show it."""
    setattr(obj, _READ, page_now(request))


def shown_at(obj: Any) -> datetime:
    """The *now* of the page showing ``obj`` (``stamp``); a fresh reading if none was kept."""
    return getattr(obj, _READ, None) or engine_now()
