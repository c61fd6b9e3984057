"""Stands for an app's ``jobs.py`` that wraps a function defined in another module: the job
registers as ``tests.discovery.helpers.send_digest``, not under this module."""

from django_cadence import job
from tests.discovery import helpers

send_digest = job(max_attempts=2)(helpers.send_digest)
