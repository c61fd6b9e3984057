"""The test settings with a ``CADENCE_*`` setting of the wrong type (django_cadence.E002)."""

from tests.settings import *  # noqa: F403

CADENCE_LEASE = "thirty seconds"
