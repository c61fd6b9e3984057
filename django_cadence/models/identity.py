"""The ORM's guard of an attempt's identity (invariant 7 of docs/design.md).

An attempt's schedule, occurrence and trigger never change once written. ``Attempt.save()``
and the attempts' ``QuerySet.update()`` (which ``bulk_update()`` goes through, one ``CASE``
per field) refuse such a write with :class:`~django_cadence.exceptions.IdentityChanged`
before anything is written, on every database; writing the same value passes. Raw SQL is
refused by a trigger where the store has one (``store/identity_guard.py``).

A write that names none of these fields pays nothing: the checks look at the names first.
The engine's writes never name them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cache
from typing import Any

from django.db import connections, models

from ..exceptions import IdentityChanged

# The attnames of the fields that say which occurrence an attempt is (its unique constraint).
IDENTITY = ("schedule_id", "occurrence_at", "trigger")


@cache
def _fields(model: type[models.Model]) -> list[tuple[str, str]]:
    """The attname and the name of each identity field."""
    fields = [model._meta.get_field(a) for a in IDENTITY]
    return [(f.attname, f.name) for f in fields]  # type: ignore[union-attr]


def _names(model: type[models.Model]) -> dict[str, str]:
    """Each name an identity field is written by (its name, its attname) -> its attname."""
    return {n: a for a, name in _fields(model) for n in (a, name)}


def refused(model: type[models.Model], attname: str) -> IdentityChanged:
    """The error for a write changing ``attname``: the column, and why it cannot change."""
    column = model._meta.get_field(attname).column  # type: ignore[union-attr]
    return IdentityChanged(IdentityChanged.message(model._meta.db_table, str(column)))


def snapshot(instance: models.Model) -> tuple[Any, dict[str, Any]]:
    """The row an instance was read from or written to: its pk and identity (None: deferred)."""
    return instance.pk, {a: instance.__dict__.get(a) for a in IDENTITY}


def check_save(
    instance: models.Model, using: str, update_fields: Collection[str] | None, force_insert: bool
) -> None:
    """Refuse a save that would change the stored row's identity.

    Only identity fields the save writes are compared: with the values the instance was
    loaded with when it has them (no query), else with the stored row (one read; a deferred
    field set after loading, a fresh instance given an existing pk)."""
    written = [
        a
        for a, name in _fields(type(instance))
        if a in instance.__dict__ and (update_fields is None or {a, name} & set(update_fields))
    ]
    pk, loaded = getattr(instance, "_identity", (None, {}))
    stored = dict(loaded) if pk is not None and pk == instance.pk else {}
    unknown = [a for a in written if stored.get(a) is None]
    if unknown and instance.pk is not None and not force_insert:
        rows = type(instance)._base_manager.db_manager(using).filter(pk=instance.pk)
        stored.update(rows.values(*unknown).first() or {})
    for a in written:
        if stored.get(a) is not None and stored[a] != instance.__dict__[a]:
            raise refused(type(instance), a)


def identity_values(model: type[models.Model], values: Mapping[str, Any]) -> dict[str, Any]:
    """The identity fields among ``update()``'s keyword arguments, by the names given."""
    names = _names(model)
    return {k: v for k, v in values.items() if k in names}


def changed_by_update(queryset: models.QuerySet[Any], named: Mapping[str, Any]) -> str | None:
    """The attname of an identity field that ``update(**named)`` would change in a row of
    ``queryset``, or None: one locking read, of the rows as the update will see them."""
    of_self = connections[queryset.db].features.has_select_for_update_of
    locked = queryset.select_for_update(of=("self",) if of_self else ())
    if not locked.exclude(**named).exists():
        return None
    names = _names(queryset.model)
    return next(
        (names[k] for k, v in named.items() if locked.exclude(**{k: v}).exists()),
        names[next(iter(named))],
    )
