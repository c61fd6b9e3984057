"""The test settings with ``USE_TZ = False`` (django_cadence.E001)."""

from tests.settings import *  # noqa: F403

USE_TZ = False
