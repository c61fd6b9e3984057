"""Admin pages of rows that people read but never write in a form."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


class ReadOnlyAdmin:
    """No add, change or delete form: the engine and the actions write these rows."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
