"""The system checks as users meet them: ``manage.py check`` in a subprocess against a
settings module with one mistake each (tests/check_settings/), and Django's registry in a
fresh interpreter, where nothing but ``AppConfig.ready()`` can have registered them."""

from __future__ import annotations

import subprocess

import pytest
from django.core import checks
from django.test import override_settings

from tests.support.commands import run_python


def run(*args: str, settings: str) -> subprocess.CompletedProcess[str]:
    env = {"CADENCE_TEST_DB": "sqlite", "DJANGO_SETTINGS_MODULE": settings}
    return run_python(*args, env=env, unset=["CADENCE_TEST_OVERRIDES"])


def manage_check(settings: str) -> subprocess.CompletedProcess[str]:
    return run("-m", "django", "check", settings=f"tests.check_settings.{settings}")


@pytest.mark.parametrize(
    ("settings", "check_id", "message"),
    [
        ("use_tz_false", "django_cadence.E001", "needs USE_TZ = True"),
        (
            "malformed_setting",
            "django_cadence.E002",
            (
                "CADENCE_LEASE must be a datetime.timedelta or a number of seconds, "
                "not 'thirty seconds'."
            ),
        ),
        ("without_dalf", "django_cadence.E003", 'Add "dalf" to INSTALLED_APPS'),
        (
            "bad_metrics_address",
            "django_cadence.E002",
            (
                "CADENCE_METRICS_ADDRESS must be an IP address or a host name to listen on, such "
                "as '127.0.0.1' (this machine only), '0.0.0.0' or '::' (every interface), not "
                "'every interface'."
            ),
        ),
    ],
)
def test_manage_py_check_reports_each_error_and_exits_non_zero(settings, check_id, message):
    result = manage_check(settings)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"?: ({check_id})" in result.stderr
    assert message in result.stderr
    assert "SystemCheckError" in result.stderr


def test_manage_py_check_warns_of_sqlite_without_immediate_transactions():
    result = manage_check("sqlite_deferred")
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "?: (django_cadence.W001)" in output
    assert "does not use IMMEDIATE transactions" in output
    assert '"transaction_mode": "IMMEDIATE"' in output


def test_manage_py_check_warns_of_executor_entries_that_name_nothing():
    """A mistyped module or function in CADENCE_EXECUTORS can never match: each is named,
    with what is wrong and the nearest name that exists."""
    result = manage_check("mistyped_executors")
    assert result.returncode == 0, result.stderr
    output = " ".join((result.stdout + result.stderr).split())
    assert output.count("(django_cadence.W003)") == 2
    assert output.count("(django_cadence.W004)") == 3
    assert (
        "?: (django_cadence.W003) CADENCE_EXECUTORS entry 'tests.jbos.*' names the module "
        "'tests.jbos', which cannot be imported (No module named 'tests.jbos'): it can never "
        "match an executor. HINT: Did you mean 'tests.jobs.*'?" in output
    )
    assert "CADENCE_EXECUTORS entry 'tests.jbos.send' names the module 'tests.jbos'" in output
    assert (
        "?: (django_cadence.W004) CADENCE_EXECUTORS entry 'tests.jobs.does_not_exist' names "
        "nothing: the module 'tests.jobs' has no 'does_not_exist'. HINT: Correct the name, "
        "or remove the entry." in output
    )
    assert (
        "?: (django_cadence.W004) CADENCE_EXECUTORS entry 'tests.jobs.echoo' names nothing: "
        "the module 'tests.jobs' has no 'echoo'. HINT: Did you mean 'tests.jobs.echo'?" in output
    )
    assert (
        "?: (django_cadence.W004) CADENCE_EXECUTORS entry 'tests.jobs.BadRepr' names a class, "
        "not a function or callable object: it can never run." in output
    )
    assert "entry 'tests.jobs.*'" not in output  # the sound pattern is not named


def test_manage_py_check_is_quiet_about_sound_settings():
    result = manage_check("sound")
    assert result.returncode == 0, result.stderr
    assert "django_cadence." not in result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_checks_are_in_djangos_registry_after_setup_alone():
    """In a fresh interpreter nothing imports ``django_cadence.checks`` but ``ready()``."""
    code = (
        "import django; django.setup(); from django.core.checks import run_checks; "
        "print(sorted({m.id for m in run_checks()}))"
    )
    result = run("-c", code, settings="tests.check_settings.use_tz_false")
    assert result.returncode == 0, result.stderr
    assert "'django_cadence.E001'" in result.stdout


@pytest.mark.django_db  # Django 6's run_checks() may read the database
def test_run_checks_in_this_process_reports_use_tz_false():
    with override_settings(USE_TZ=False):
        ids = {message.id for message in checks.run_checks()}
    assert "django_cadence.E001" in ids
