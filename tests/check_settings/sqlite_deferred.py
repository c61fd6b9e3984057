"""The test settings on SQLite without IMMEDIATE transactions (django_cadence.W001)."""

from tests.settings import *  # noqa: F403

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "unused.sqlite3"}}
