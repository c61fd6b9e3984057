"""These tests run only under tests.own_database.settings (``make test-<database>`` runs them)."""

from django.conf import settings

if "cadence" not in settings.DATABASES:
    collect_ignore_glob = ["test_*.py"]
