import pytest
from django.core import checks
from django.test import override_settings

from django_cadence.checks import (
    check_dalf_installed,
    check_executor_patterns,
    check_settings,
    check_use_tz,
    sqlite_transaction_warnings,
)


def ids(messages):
    return [m.id for m in messages]


def test_checks_use_tz_false_is_an_error():
    with override_settings(USE_TZ=False):
        messages = check_use_tz()
    assert ids(messages) == ["django_cadence.E001"]
    assert messages[0].level == checks.ERROR


def test_checks_use_tz_true_passes():
    assert check_use_tz() == []


def test_checks_dalf_missing_is_an_error_that_names_it():
    apps_without_dalf = [
        "django.contrib.admin",
        "django.contrib.contenttypes",
        "django.contrib.auth",
        "django.contrib.messages",
        "django.contrib.sessions",
        "django_cadence",
    ]
    with override_settings(INSTALLED_APPS=apps_without_dalf):
        messages = check_dalf_installed()
    assert ids(messages) == ["django_cadence.E003"]
    assert messages[0].level == checks.ERROR
    assert '"dalf"' in messages[0].msg
    assert 'Add "dalf" to INSTALLED_APPS' in messages[0].hint


def test_checks_dalf_is_not_needed_without_the_admin():
    worker_apps = ["django.contrib.contenttypes", "django_cadence"]
    with override_settings(INSTALLED_APPS=worker_apps):
        assert check_dalf_installed() == []


def test_checks_dalf_installed_passes():
    assert check_dalf_installed() == []


def test_checks_malformed_setting_names_it():
    with override_settings(CADENCE_LEASE="thirty"):
        messages = check_settings()
    assert ids(messages) == ["django_cadence.E002"]
    assert "CADENCE_LEASE" in messages[0].msg


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, ["django_cadence.W001"]),
        ({"transaction_mode": "DEFERRED"}, ["django_cadence.W001"]),
        ({"transaction_mode": "IMMEDIATE"}, []),
    ],
    ids=["no-options", "deferred", "immediate"],
)
def test_checks_sqlite_without_immediate_warns_with_the_fix(options, expected):
    databases = {
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "x", "OPTIONS": options},
        "other": {"ENGINE": "django.db.backends.postgresql", "NAME": "x"},
    }
    messages = sqlite_transaction_warnings(databases)
    assert ids(messages) == expected
    if messages:
        assert '"transaction_mode": "IMMEDIATE"' in messages[0].hint


def test_checks_registered_with_django():
    registered = {check.__name__ for check in checks.registry.registry.get_checks()}
    assert {"check_use_tz", "check_settings", "check_sqlite_transaction_mode"} <= registered


def test_checks_executor_pattern_that_never_matches_warns():
    with override_settings(CADENCE_EXECUTORS=["tests.jobs.*", "*", "my app.jobs"]):
        messages = check_executor_patterns()
    assert ids(messages) == ["django_cadence.W002", "django_cadence.W002"]
    assert "'*'" in messages[0].msg


def test_checks_registered_with_django_include_patterns():
    registered = {check.__name__ for check in checks.registry.registry.get_checks()}
    assert "check_executor_patterns" in registered
