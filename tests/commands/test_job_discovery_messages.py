"""A schedule naming a job ``@job`` never registered under that path says where jobs are
found and how to allow it, in ``cadence_sync``'s own output."""

import os

import pytest

from benchmarks.fleet import database_env
from tests.support.commands import ROOT, run_django

pytestmark = pytest.mark.django_db(transaction=True)  # the child reads the database's clock

SETTINGS = """
from tests.settings import *
import tests.discovery.jobs_module  # as an app's jobs.py would be

CADENCE_EXECUTORS = {executors!r}
CADENCE_SCHEDULES = {{"digest": {{"cron": "@daily", "executor": {executor!r}}}}}
"""


def sync(tmp_path, executor, executors=()):
    settings = SETTINGS.format(executor=executor, executors=list(executors))
    (tmp_path / "discovery_settings.py").write_text(settings)
    env = {
        **database_env(),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
        "DJANGO_SETTINGS_MODULE": "discovery_settings",
    }
    return run_django("cadence_sync", "--dry-run", env=env, timeout=60)


def test_job_outside_jobs_py_says_where_jobs_are_discovered_and_what_to_do(tmp_path):
    result = sync(tmp_path, "tests.discovery.reports.nightly_report")
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert "Executor 'tests.discovery.reports.nightly_report' is not allowed" in message
    assert "@job functions are found by importing each installed app's jobs.py" in message
    assert "move the function into an app's jobs.py" in message
    assert "import 'tests.discovery.reports' from one" in message
    assert (
        "add 'tests.discovery.reports.nightly_report' (or 'tests.discovery.reports.*') "
        "to CADENCE_EXECUTORS" in message
    )


def test_job_wrapping_a_function_from_elsewhere_names_the_path_it_registered(tmp_path):
    result = sync(tmp_path, "tests.discovery.jobs_module.send_digest")
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert "Executor 'tests.discovery.jobs_module.send_digest' is not allowed" in message
    assert (
        "A function of that name is registered as 'tests.discovery.helpers.send_digest' "
        "(@job registers a function under the module that defines it): use that path." in message
    )


def test_a_job_that_does_not_exist_says_so_before_the_allow_list(tmp_path):
    """``tests.jobs`` is an installed app's jobs.py, imported at start-up: a name it lacks is
    said to be missing; adding it to CADENCE_EXECUTORS would not help, so that is not advised."""
    result = sync(tmp_path, "tests.jobs.does_not_exist")
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert (
        "schedule 'digest' (CADENCE_SCHEDULES['digest']): executor: Executor "
        "'tests.jobs.does_not_exist' does not exist: the module 'tests.jobs' has no "
        "'does_not_exist'." in message
    )
    assert "CADENCE_EXECUTORS" not in message
    assert "not allowed" not in message


@pytest.mark.parametrize(
    ("executor", "executors", "meant"),
    [
        ("tests.jobs.at_most_once_nop", [], "tests.jobs.at_most_once_noop"),
        ("tests.jobs.echoo", ["tests.jobs.*"], "tests.jobs.echo"),
    ],
    ids=["registered", "pattern"],
)
def test_a_mistyped_job_names_the_one_meant(tmp_path, executor, executors, meant):
    result = sync(tmp_path, executor, executors)
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert f"Executor {executor!r} does not exist" in message
    assert f"Did you mean {meant!r}?" in message
