"""A job that says which database its atomic transaction is on."""

from __future__ import annotations

from django.db import connections

from django_cadence.executors.registry import job


@job(delivery="atomic")
def where_atomic_runs() -> dict[str, bool]:
    """An atomic job runs inside the transaction of its success write: on Cadence's database."""
    return {alias: connections[alias].in_atomic_block for alias in ("default", "cadence")}
