"""The router a project writes to keep Cadence in a database of its own (docs/howto)."""

from __future__ import annotations

from typing import Any

CADENCE_DATABASE = "cadence"


class CadenceRouter:
    """Every read, write and migration of django_cadence goes to ``cadence``; nothing else does."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return CADENCE_DATABASE if model._meta.app_label == "django_cadence" else None

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return CADENCE_DATABASE if model._meta.app_label == "django_cadence" else None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return (db == CADENCE_DATABASE) == (app_label == "django_cadence")
