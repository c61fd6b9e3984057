"""Settings for the test suite; CADENCE_TEST_DB picks the database (sqlite | postgresql | mysql)."""

import json
import os

SECRET_KEY = "django-cadence-tests"
USE_TZ = True
TIME_ZONE = "UTC"
DEBUG = False

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dalf",
    "django_cadence",
    "tests",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "tests.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
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

_DB = os.environ.get("CADENCE_TEST_DB", "sqlite")

if _DB == "sqlite":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("CADENCE_SQLITE_NAME", "cadence-test.sqlite3"),
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
            "TEST": {"NAME": os.environ.get("CADENCE_SQLITE_TEST_NAME", "cadence-test.sqlite3")},
        }
    }
elif _DB == "postgresql":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("CADENCE_PG_NAME", "test"),
            "USER": os.environ.get("CADENCE_PG_USER", "postgres"),
            "HOST": os.environ.get("CADENCE_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("CADENCE_PG_PORT", "5432"),
        }
    }
elif _DB == "mysql":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "NAME": os.environ.get("CADENCE_MYSQL_NAME", "test"),
            "USER": os.environ.get("CADENCE_MYSQL_USER", "root"),
            "PASSWORD": os.environ.get("CADENCE_MYSQL_PASSWORD", ""),
            "HOST": os.environ.get("CADENCE_MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("CADENCE_MYSQL_PORT", "3306"),
            "OPTIONS": {"charset": "utf8mb4"},
            "TEST": {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"},
        }
    }
else:
    raise RuntimeError(f"CADENCE_TEST_DB must be sqlite, postgresql or mysql, not {_DB!r}")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The admin's CSS and JavaScript (the schedule preview among them): the browser tests' live
# server serves them from the apps' static folders, as runserver does in the example project.
STATIC_URL = "/static/"

CADENCE_EXECUTORS = ["tests.jobs.*"]

# tests/fleet/test_hostile_jobs.py installs apps in its run_cadence children (receivers that
# raise); unset everywhere else.
INSTALLED_APPS += [app for app in os.environ.get("CADENCE_TEST_EXTRA_APPS", "").split(",") if app]

# tests/fleet passes shrunken CADENCE_* settings (numbers of seconds) to its run_cadence
# children as JSON; unset everywhere else, so nothing changes for the rest of the suite.
for _name, _value in json.loads(os.environ.get("CADENCE_TEST_OVERRIDES") or "{}").items():
    if not _name.startswith("CADENCE_"):
        raise RuntimeError(f"CADENCE_TEST_OVERRIDES may set only CADENCE_* settings, not {_name}")
    globals()[_name] = _value

# Logging in to the admin in tests needs no strong hashing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
