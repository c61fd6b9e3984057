"""Settings of the example project.

SQLite by default. ``CADENCE_EXAMPLE_DB=postgresql`` or ``CADENCE_EXAMPLE_DB=mysql`` switch
to the local PostgreSQL or MariaDB server (``DB_NAME``, ``DB_USER``, ``DB_PASSWORD``,
``DB_HOST``, ``DB_PORT`` override the defaults).
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-project-not-for-production")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dalf",
    "django_cadence",
    "example_project.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

_DB = os.environ.get("CADENCE_EXAMPLE_DB", "sqlite")
if _DB == "sqlite":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("DB_NAME", str(BASE_DIR / "db.sqlite3")),
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    }
elif _DB in ("postgresql", "mysql"):
    DATABASES = {
        "default": {
            "ENGINE": f"django.db.backends.{_DB}",
            "NAME": os.environ.get("DB_NAME", "cadence_example"),
            "USER": os.environ.get("DB_USER", "postgres" if _DB == "postgresql" else "root"),
            "PASSWORD": os.environ.get("DB_PASSWORD", ""),
            "HOST": os.environ.get("DB_HOST", "127.0.0.1"),
            "PORT": os.environ.get("DB_PORT", "5432" if _DB == "postgresql" else "3306"),
        }
    }
else:
    raise RuntimeError(f"CADENCE_EXAMPLE_DB must be sqlite, postgresql or mysql, not {_DB!r}")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = True

STATIC_URL = "static/"

# Only the demo's jobs may run (they are also registered with @job).
CADENCE_EXECUTORS = ["example_project.demo.jobs.*"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "django_cadence": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "example_project": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
CADENCE_SHUTDOWN_GRACE = 10  # a quick Ctrl+C for the demo; production keeps the default
