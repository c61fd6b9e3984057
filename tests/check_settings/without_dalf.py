"""The test settings with the admin installed and ``dalf`` left out (django_cadence.E003)."""

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "dalf"]
