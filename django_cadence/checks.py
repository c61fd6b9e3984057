"""System checks with stable ids; a removed check's id is never reused.

- ``django_cadence.E001``: ``USE_TZ`` is False.
- ``django_cadence.E002``: a ``CADENCE_*`` setting is malformed.
- ``django_cadence.E003``: the admin is installed without ``dalf``, which its list filters use.
- ``django_cadence.E004``: database routers that split Cadence's models over several aliases.
- ``django_cadence.W001``: a SQLite database without IMMEDIATE transactions.
- ``django_cadence.W002``: a ``CADENCE_EXECUTORS`` pattern that can never match.
- ``django_cadence.W003``: a ``CADENCE_EXECUTORS`` entry whose module cannot be imported.
- ``django_cadence.W004``: an exact ``CADENCE_EXECUTORS`` entry that names no callable.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.db import router

from . import store
from .conf import validate_all
from .executors import discovery
from .executors.paths import invalid_patterns


@checks.register(checks.Tags.compatibility)
def check_use_tz(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if getattr(settings, "USE_TZ", False):
        return []
    return [
        checks.Error(
            "django-cadence stores every instant in UTC and needs USE_TZ = True.",
            hint="Set USE_TZ = True in your settings.",
            id="django_cadence.E001",
        )
    ]


@checks.register(checks.Tags.compatibility)
def check_dalf_installed(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Only where the admin is installed: a worker's settings may leave both out."""
    if apps.is_installed("dalf") or not apps.is_installed("django.contrib.admin"):
        return []
    return [
        checks.Error(
            'The Cadence admin\'s list filters come from the "dalf" app, which is not in '
            "INSTALLED_APPS; without it the attempts pages fail with TemplateDoesNotExist.",
            hint='Add "dalf" to INSTALLED_APPS (it is installed with django-cadence-scheduler).',
            id="django_cadence.E003",
        )
    ]


@checks.register(checks.Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return [checks.Error(str(problem), id="django_cadence.E002") for problem in validate_all()]


@checks.register(checks.Tags.compatibility)
def check_one_database(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Cadence lives in one database alias (docs/design.md, Databases): the routers must send
    every read, write and migration of its models there, where its transactions are."""
    chosen = store.alias()
    split: list[str] = []
    for model in apps.get_app_config("django_cadence").get_models():
        read = router.db_for_read(model)
        if read != chosen:
            split.append(f"{model.__name__} is read from {read!r}")
        written = router.db_for_write(model)
        if written != chosen:
            split.append(f"{model.__name__} is written to {written!r}")
        if not router.allow_migrate_model(chosen, model):
            split.append(f"{model.__name__} is not migrated in {chosen!r}")
    if not split:
        return []
    return [
        checks.Error(
            f"Cadence lives in the database {chosen!r}, but its routers disagree: "
            f"{'; '.join(split)}.",
            hint=f"Route every read, write and migration of the django_cadence app to {chosen!r} "
            "(docs: Run Cadence in its own database).",
            id="django_cadence.E004",
        )
    ]


@checks.register(checks.Tags.compatibility)
def check_executor_patterns(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if validate_all():
        return []  # E002 already reports a malformed CADENCE_EXECUTORS
    return [
        checks.Warning(
            f"CADENCE_EXECUTORS entry {pattern!r} can never match an executor.",
            hint='Use a dotted path ("myapp.jobs.send") or a prefix ("myapp.jobs.*").',
            id="django_cadence.W002",
        )
        for pattern in invalid_patterns()
    ]


@checks.register(checks.Tags.compatibility)
def check_executor_entries(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Well-formed entries that name nothing: a mistyped module (W003) or function (W004).
    Imports the modules the entries name, as the engine will."""
    if validate_all():
        return []
    return [
        checks.Warning(
            problem.message,
            hint=problem.hint,
            id="django_cadence.W003" if problem.missing_module else "django_cadence.W004",
        )
        for problem in discovery.entry_problems()
    ]


@checks.register(checks.Tags.compatibility)
def check_sqlite_transaction_mode(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Read from the settings alone (no connection), so a plain ``manage.py check`` says it."""
    return sqlite_transaction_warnings(settings.DATABASES)


def sqlite_transaction_warnings(databases: dict[str, Any]) -> list[checks.CheckMessage]:
    """Deferred SQLite transactions upgrade to a write lock half-way and then fail with
    "database is locked" under concurrent writers; IMMEDIATE takes the lock up front."""
    messages: list[checks.CheckMessage] = []
    for alias, conn_settings in databases.items():
        if conn_settings.get("ENGINE") != "django.db.backends.sqlite3":
            continue
        mode = (conn_settings.get("OPTIONS") or {}).get("transaction_mode")
        if str(mode).upper() != "IMMEDIATE":
            messages.append(
                checks.Warning(
                    f"SQLite database {alias!r} does not use IMMEDIATE transactions; the "
                    "engine and the admin may then fail with 'database is locked'.",
                    hint=f'Add "OPTIONS": {{"transaction_mode": "IMMEDIATE"}} to '
                    f"DATABASES[{alias!r}].",
                    id="django_cadence.W001",
                )
            )
    return messages
