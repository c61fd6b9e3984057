"""What ``cadence_sync`` says of a declaration it refuses, as a user reads it on stderr: one
sentence per field, each ending once, and no kind assumed that the declaration did not give."""

import os

import pytest

from benchmarks.fleet import database_env
from tests.support.commands import ROOT, run_django

pytestmark = pytest.mark.django_db(transaction=True)  # the child reads the database's clock

SETTINGS = """
from tests.settings import *

CADENCE_SCHEDULES = {{"report": {fields!r}}}
"""


def sync(tmp_path, **fields):
    (tmp_path / "sync_settings.py").write_text(SETTINGS.format(fields=fields))
    env = {
        **database_env(),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
        "DJANGO_SETTINGS_MODULE": "sync_settings",
    }
    result = run_django("cadence_sync", "--dry-run", env=env, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    return " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("fields", "given"),
    [
        ({"cron": "@daily", "interval": 60}, "cron and interval"),
        ({"interval": 60, "run_at": "2030-01-01T00:00:00Z"}, "interval and run_at"),
        (
            {"cron": "@daily", "interval": 60, "run_at": "2030-01-01T00:00:00Z"},
            "cron, interval and run_at",
        ),
    ],
    ids=["cron-interval", "interval-once", "all-three"],
)
def test_cadence_sync_names_the_spec_fields_given_together_and_assumes_no_kind(
    tmp_path, fields, given
):
    message = sync(tmp_path, executor="tests.jobs.noop", **fields)
    assert (
        "schedule 'report' (CADENCE_SCHEDULES['report']): kind: Give only one of cron, "
        f"interval or run_at (which sets the kind), not {given}." in message
    )
    assert "A cron schedule" not in message
    assert "An interval schedule" not in message
    assert ".;" not in message


def test_cadence_sync_without_a_spec_field_says_what_sets_the_kind(tmp_path):
    message = sync(tmp_path, executor="tests.jobs.noop")
    assert (
        "schedule 'report' (CADENCE_SCHEDULES['report']): kind: A schedule needs one of cron, "
        "interval or run_at, which also sets its kind." in message
    )
    assert "A cron schedule" not in message


def test_cadence_sync_joins_the_fields_as_sentences(tmp_path):
    message = sync(tmp_path, cron="61 * * * *", executor="tests.jobs.noop", overlap="sometimes")
    assert ".;" not in message
    assert "cron: " in message
    assert (
        ". overlap: Unknown overlap 'sometimes': choose one of allow, skip_if_running, queue, "
        "buffer_one, replace." in message
    )


@pytest.mark.parametrize("field", ["run_at", "start_at", "end_at"])
def test_cadence_sync_refuses_an_instant_at_the_ends_of_the_calendar_on_its_field(tmp_path, field):
    spec = {"run_at": "0001-01-01T00:00:00Z"} if field == "run_at" else {"interval": 60}
    spec[field] = "0001-01-01T00:00:00Z"
    message = sync(tmp_path, executor="tests.jobs.noop", **spec)
    assert (
        f"{field}: {field} must fall within the years 2 to 9998 (UTC), not "
        "0001-01-01T00:00:00+00:00." in message
    )
    assert "Traceback" not in message
