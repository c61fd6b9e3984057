"""Settings of the admin page benchmark: the benchmark settings plus Django's admin.

Everything else (database from ``CADENCE_BENCH_DB`` and ``CADENCE_BENCH_NAME``, the engine's
defaults) is ``benchmarks.settings``; the other benchmarks keep running without the admin.
``DEBUG`` stays off: the page times are those of a production configuration.
"""

from .settings import *  # noqa: F403

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dalf",
    "django_cadence",
    "benchmarks.app",
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

ROOT_URLCONF = "benchmarks.admin_urls"

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

ALLOWED_HOSTS = ["testserver"]  # Django's test client
STATIC_URL = "/static/"
