"""Settings of the chaos harness's workers (``benchmarks/chaos.py``, ``benchmarks/recovery.py``).

The database comes from the environment as ``benchmarks.fleet.database_env`` sets it
(``CADENCE_TEST_DB`` and ``CADENCE_*_NAME``), so a worker started by a test sees that test's
database; ``CADENCE_TEST_OVERRIDES`` shrinks leases; ``CADENCE_CHAOS_DEBUG=1`` turns ``DEBUG``
on, as the soak run needs (Django then keeps every query it runs). The jobs are
``benchmarks/chaos_app/jobs.py``, their effects that app's ``Effect`` rows.
"""

import os

from benchmarks.fleet import databases_from_env, settings_overrides

SECRET_KEY = "django-cadence-chaos"
USE_TZ = True
TIME_ZONE = "UTC"
DEBUG = os.environ.get("CADENCE_CHAOS_DEBUG") == "1"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django_cadence",
    "benchmarks.chaos_app",
]

DATABASES = databases_from_env()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CADENCE_EXECUTORS = ["benchmarks.chaos_app.jobs.*"]

globals().update(settings_overrides())
