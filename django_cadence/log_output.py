"""Where ``run_cadence``'s own lines go, and a JSON formatter for them.

Like ``runserver``, the engine shows what it does whatever the root logger's level: unless
the project configures a ``django_cadence`` logger itself (in ``LOGGING`` or in code), the
``django_cadence`` logger is set to INFO, and its lines go through the project's root
handlers when one of them takes INFO lines, else to stderr through a handler of its own
(which leaves to the root handlers the levels they already show, so nothing prints twice).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

LOGGER = "django_cadence"
FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def configured_by_project() -> bool:
    """Whether the project set a level or a handler on ``django_cadence`` or one below it."""
    named = (getattr(settings, "LOGGING", None) or {}).get("loggers", {})
    if any(name == LOGGER or name.startswith(f"{LOGGER}.") for name in named):
        return True
    loggers = [logging.getLogger(LOGGER)] + [
        found
        for name, found in logging.Logger.manager.loggerDict.items()
        if name.startswith(f"{LOGGER}.") and isinstance(found, logging.Logger)
    ]
    return any(found.handlers or found.level != logging.NOTSET for found in loggers)


def ensure_output() -> None:
    """Show the engine's INFO lines unless the project configured its loggers (see above)."""
    if configured_by_project():
        return
    cadence = logging.getLogger(LOGGER)
    cadence.setLevel(logging.INFO)
    shown_by_root = min(
        (h.level or logging.NOTSET for h in logging.getLogger().handlers), default=None
    )
    if shown_by_root is not None and shown_by_root <= logging.INFO:
        return  # the project's own handlers take INFO lines: its format, its destinations
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    if shown_by_root is not None:
        below = shown_by_root
        handler.addFilter(lambda record: record.levelno < below)
    cadence.addHandler(handler)


_PAIR = re.compile(r"(?:^|\s)([a-z_]+)=(\S*)")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
    each ``key=value`` pair of the message as a field of its own, and ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
        }
        for key, value in _PAIR.findall(message):
            line.setdefault(key, value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)
