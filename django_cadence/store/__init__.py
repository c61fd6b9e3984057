"""Cadence's side of its database: what differs by vendor, behind one interface
(:class:`.base.Store`), and what every vendor shares beneath the ORM.

``store.of(using)`` is the store of a database alias: what it can do (server clock,
notifications, row locks, one engine per file) and the statements spelled for it
(``base``, ``postgresql``, ``mysql``, ``sqlite``). ``store.alias()`` is the alias Cadence
lives in, the one every query of Cadence goes to. Beside them, the same on every vendor: the
busy round's statements written once in SQL (``batch_writes``), reads compiled once
(``prepared``), bounded waits on a worker's connections (``bounds``), pooling proxies found
(``pooling``) and the identity trigger (``identity_guard``). No code outside this folder asks
for the vendor.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.db import connections, router

from .base import Store

_STORES: dict[str, type[Store]] = {}


def alias() -> str:
    """The database alias Cadence lives in: the one the project's database routers choose
    for writing its models (``"default"`` without routers). One alias holds all of Cadence
    (docs/design.md, Databases); ``checks`` refuses routers that split its models."""
    from django.apps import apps

    return router.db_for_write(apps.get_model("django_cadence", "Attempt"))


def alias_or_refuse(using: str | None) -> str:
    """Cadence's alias, when ``using`` is None or names it; an ``ImproperlyConfigured``
    naming both when it names another: Cadence's rows cannot live in two databases."""
    chosen = alias()
    if using is None or using == chosen:
        return chosen
    raise ImproperlyConfigured(
        f"Cadence lives in the database {chosen!r} (where DATABASE_ROUTERS send its models), "
        f"not in {using!r}: route django_cadence to {using!r}, or leave the database unnamed."
    )


def of(using: str | None = None) -> Store:
    """The store of the database ``using`` (Cadence's, :func:`alias`, when None); the
    portable defaults for an unknown vendor."""
    if not _STORES:
        from .mysql import MySQLStore
        from .postgresql import PostgreSQLStore
        from .sqlite import SQLiteStore

        _STORES.update({s.vendor: s for s in (PostgreSQLStore, MySQLStore, SQLiteStore)})
    using = using or alias()
    return _STORES.get(connections[using].vendor, Store)(using)


__all__ = ["Store", "alias", "alias_or_refuse", "of"]
