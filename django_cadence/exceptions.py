"""The exceptions django-cadence raises, under one base class.

Each narrow class also inherits the built-in it resembles, so callers that already catch
``ValueError`` or ``LookupError`` keep working; the docstring is the default message.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError


class CadenceError(Exception):
    """A django-cadence error."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class Permanent(CadenceError):
    """The job failed in a way retrying cannot fix; dead-letter the attempt now."""


class InvalidSpec(CadenceError, ValueError):
    """The schedule's spec is invalid."""


class ExecutorNotAllowed(CadenceError, ValueError):
    """The executor path is not in CADENCE_EXECUTORS and is not registered with @job."""


class ExecutorNotFound(CadenceError, LookupError):
    """The executor path is allowed but does not name an importable callable."""


class InvalidPayload(CadenceError, ValueError):
    """The payload must be a JSON object within CADENCE_PAYLOAD_MAX_BYTES."""


class ClaimLost(CadenceError, RuntimeError):
    """This try no longer holds its attempt (recovered, timed out or finished): stop now."""


class UncertainNotDurable(CadenceError, RuntimeError):
    """mark_uncertain() cannot commit beside an atomic job's open transaction on a database
    with one writer at a time (SQLite): make the job at_most_once, or not atomic."""


class UnsupportedConnection(CadenceError, ImproperlyConfigured):
    """run_cadence cannot keep its guarantees on this database connection as configured."""


class IdentityChanged(CadenceError, IntegrityError):
    """A write would change an attempt's schedule, occurrence or trigger (invariant 7); it is
    an ``IntegrityError``, as the database trigger's refusal of raw SQL is."""

    @staticmethod
    def message(table: str, column: str) -> str:
        """The error for a write that changes ``column``: the field, and why it cannot change.

        The model's guard (``models/identity.py``) and the database's trigger
        (``store/identity_guard.py``) say the same words.
        """
        return (
            f"{table}.{column} cannot change: the schedule, occurrence and trigger of an "
            f"attempt are its identity (invariant 7, docs/design.md); create a new attempt instead"
        )
