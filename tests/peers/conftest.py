"""The peers' tests run only under tests.peers.settings (``make test-peers``)."""

from django.conf import settings

if "django_celery_beat" not in settings.INSTALLED_APPS:
    collect_ignore_glob = ["test_*.py"]
