"""Settings for the test suite; CADENCE_TEST_DB picks the database (sqlite | postgresql | mysql)."""

import os

from benchmarks.fleet import databases_from_env, settings_overrides

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
    "benchmarks.chaos_app",  # the chaos harness's Effect rows, for tests/fleet/test_chaos.py
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

# CADENCE_TEST_DB and CADENCE_*_NAME, as benchmarks.fleet sets them for a run_cadence child.
DATABASES = databases_from_env()

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
globals().update(settings_overrides())

# Logging in to the admin in tests needs no strong hashing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
