"""The test settings with a metrics address no listener can take (django_cadence.E002)."""

from tests.settings import *  # noqa: F403

CADENCE_METRICS_ADDRESS = "every interface"
