"""Fixtures shared by the suite: a schedule factory and the current database's vendor."""

from __future__ import annotations

from datetime import timedelta

import pytest


@pytest.fixture
def make_schedule(db):
    """Create a valid schedule, overriding any field: ``make_schedule(kind="cron", cron=...)``."""
    from django_cadence.models import Schedule

    counter = iter(range(1, 1_000_000))

    def factory(**fields):
        defaults = {
            "name": f"schedule-{next(counter)}",
            "kind": "interval",
            "interval": timedelta(minutes=5),
            "executor": "tests.jobs.noop",
            "payload": {},
        }
        defaults.update(fields)
        return Schedule.objects.create(**defaults)

    return factory
