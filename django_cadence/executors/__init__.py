"""Executors: the jobs a schedule names by dotted path, behind the allow-list.

Public here: ``job``, ``AttemptContext`` and ``idempotency_key``.
"""

from .calling import AttemptContext, idempotency_key
from .registry import job

__all__ = ["AttemptContext", "idempotency_key", "job"]
