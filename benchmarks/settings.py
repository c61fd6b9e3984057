"""Django settings for the benchmark databases; ``CADENCE_BENCH_DB`` picks the backend.

- ``postgresql``: database ``cadence_bench`` on 127.0.0.1:5432 (user postgres, trust).
- ``mysql``: database ``cadence_bench`` on MariaDB 127.0.0.1:3306 (root, no password).
- ``sqlite``: ``benchmarks/results/cadence_bench.sqlite3``.

``CADENCE_BENCH_NAME`` names another database (the file name on SQLite), so that a benchmark
can run beside others on the same server without dropping their database.

The harness drops and recreates the database at the start of every workload. Everything
else is the engine's defaults (``CONN_MAX_AGE = 0``, INFO logging of the command), so what
is measured is what a user gets out of the box. ``CADENCE_BENCH_OVERRIDES`` (JSON) may set
``CADENCE_*`` settings for an experiment; the harness records it in the results.
"""

import os
import re
from pathlib import Path

from benchmarks.fleet import settings_overrides

RESULTS = Path(__file__).resolve().parent / "results"

SECRET_KEY = "django-cadence-benchmarks"
USE_TZ = True
TIME_ZONE = "UTC"
DEBUG = False

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django_cadence",
    "benchmarks.app",
]

BENCH_DB = os.environ.get("CADENCE_BENCH_DB", "postgresql")
BENCH_NAME = os.environ.get("CADENCE_BENCH_NAME", "cadence_bench")
if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", BENCH_NAME):  # it is spliced into DROP DATABASE
    raise RuntimeError(f"CADENCE_BENCH_NAME must be a lowercase SQL identifier: {BENCH_NAME!r}")

if BENCH_DB == "postgresql":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": BENCH_NAME,
            "USER": os.environ.get("CADENCE_BENCH_PG_USER", "postgres"),
            "HOST": os.environ.get("CADENCE_BENCH_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("CADENCE_BENCH_PG_PORT", "5432"),
        }
    }
elif BENCH_DB == "mysql":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "NAME": BENCH_NAME,
            "USER": os.environ.get("CADENCE_BENCH_MYSQL_USER", "root"),
            "PASSWORD": os.environ.get("CADENCE_BENCH_MYSQL_PASSWORD", ""),
            "HOST": os.environ.get("CADENCE_BENCH_MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("CADENCE_BENCH_MYSQL_PORT", "3306"),
            "OPTIONS": {"charset": "utf8mb4"},
        }
    }
elif BENCH_DB == "sqlite":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(RESULTS / f"{BENCH_NAME}.sqlite3"),
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    }
else:
    raise RuntimeError(f"CADENCE_BENCH_DB must be sqlite, postgresql or mysql, not {BENCH_DB!r}")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CADENCE_EXECUTORS = ["benchmarks.app.jobs.*"]

globals().update(settings_overrides("CADENCE_BENCH_OVERRIDES"))
