"""Everything that differs by database vendor, behind one interface (:class:`.base.Store`).

``store.of(using)`` is the store of a database alias: what it can do (server clock,
notifications, row locks, one engine per file) and the statements spelled for it.
"""

from __future__ import annotations

from django.db import connections

from .base import Store

_STORES: dict[str, type[Store]] = {}


def of(using: str = "default") -> Store:
    """The store of the database ``using``; the portable defaults for an unknown vendor."""
    if not _STORES:
        from .mysql import MySQLStore
        from .postgresql import PostgreSQLStore
        from .sqlite import SQLiteStore

        _STORES.update({s.vendor: s for s in (PostgreSQLStore, MySQLStore, SQLiteStore)})
    return _STORES.get(connections[using].vendor, Store)(using)


__all__ = ["Store", "of"]
