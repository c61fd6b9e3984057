"""PostgreSQL: the engine's own connection reads ``timestamptz`` with psycopg's native loader.

Django reads every ``timestamptz`` value through a loader of its own, written in Python, so
that it can attach the connection's time zone: about 4 microseconds a value against a
tenth of that for psycopg's loader, compiled with ``psycopg[binary]``. The engine reads
several per schedule it plans and one per try it claims; in a burst that is a few percent
of the worker's CPU, all of it on the one thread that plans and claims.

The two loaders return the same value whenever the session's time zone is UTC and Django
wants aware UTC datetimes (``USE_TZ = True`` and no ``TIME_ZONE`` on the database): Django
sets the session's time zone to its own, and psycopg then attaches ``datetime.timezone.utc``
exactly as Django's loader does. Any other setup keeps Django's loader. Only the engine's
connection is changed, never the connections jobs use.
"""

from __future__ import annotations

from datetime import UTC

from django.db.backends.base.base import BaseDatabaseWrapper


def use_native_loader(connection: BaseDatabaseWrapper) -> bool:
    """Read ``timestamptz`` on ``connection``'s open session with psycopg's own loader, when
    that gives the values Django's loader would; returns whether it does."""
    raw = connection.connection
    if raw is None or connection.vendor != "postgresql" or connection.timezone is not UTC:
        return False
    try:
        import psycopg
        from psycopg.pq import Format
    except ImportError:  # psycopg2: Django's loader is not in the way there
        return False
    if not isinstance(raw, psycopg.Connection):
        return False
    if raw.info.parameter_status("TimeZone") != "UTC":
        return False
    oid = psycopg.postgres.types["timestamptz"].oid
    native = psycopg.adapters.get_loader(oid, Format.TEXT)
    if native is None:
        return False
    raw.adapters.register_loader(oid, _utc_loader(psycopg.adapt.Loader, native))
    return True


def _utc_loader(base: type, native: type) -> type:
    """A loader that hands each value to ``native``. Django looks for a ``timezone`` on the
    connection's loader before each cursor and installs its own when it differs; the
    compiled loader cannot be subclassed to carry one, so it is wrapped."""

    class NativeUTCLoader(base):
        timezone = UTC

        def __init__(self, oid: int, context=None) -> None:
            super().__init__(oid, context)
            self._load = native(oid, context).load

        def load(self, data):
            return self._load(data)

    return NativeUTCLoader
