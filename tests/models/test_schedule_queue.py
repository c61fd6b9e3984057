"""``Schedule.queue``: a short name, checked in every door; a job's queue as the default."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from django_cadence.executors.registry import job
from django_cadence.models import Schedule
from django_cadence.ops.declarations import Declaration, DeclarationError, build
from django_cadence.schedule.queues import InvalidQueue, check_queue_name, parse_queues

pytestmark = pytest.mark.django_db

BAD_NAMES = [
    ("", "cannot be empty"),
    ("x" * 65, "at most 64 characters, not 65"),
    ("two words", "starts with a letter or digit"),
    ("-dash", "starts with a letter or digit"),
    ("a,b", "starts with a letter or digit"),
    ("été", "starts with a letter or digit"),
]


def test_a_schedule_is_in_the_default_queue_unless_it_names_one(make_schedule):
    assert make_schedule().queue == "default"
    assert make_schedule(queue="billing-eu.2").queue == "billing-eu.2"


@pytest.mark.parametrize(("name", "message"), BAD_NAMES)
def test_a_bad_queue_is_a_field_error_and_nothing_is_written(make_schedule, name, message):
    with pytest.raises(ValidationError) as raised:
        make_schedule(name="bad-queue", queue=name)
    assert message in " ".join(raised.value.message_dict["queue"])
    assert not Schedule.objects.filter(name="bad-queue").exists()


@pytest.mark.parametrize(("name", "message"), BAD_NAMES)
def test_a_declared_schedule_with_a_bad_queue_is_refused_naming_the_field(name, message):
    fields = {"interval": 60, "executor": "tests.jobs.noop", "queue": name}
    with pytest.raises(DeclarationError) as raised:
        build(Declaration("declared", "CADENCE_SCHEDULES['declared']", fields))
    assert message in " ".join(raised.value.errors["queue"])


def test_a_declared_schedule_keeps_its_queue():
    fields = {"interval": 60, "executor": "tests.jobs.noop", "queue": "reports"}
    assert build(Declaration("declared", "here", fields)).queue == "reports"


def test_a_jobs_queue_is_the_default_of_the_schedules_that_run_it(make_schedule):
    assert make_schedule(executor="tests.jobs.reports_noop").queue == "reports"
    named = make_schedule(executor="tests.jobs.reports_noop", queue="billing")
    assert named.queue == "billing"  # a queue given is kept
    declared = build(
        Declaration("d", "here", {"interval": 60, "executor": "tests.jobs.reports_noop"})
    )
    assert declared.queue == "reports"


@pytest.mark.parametrize(("name", "message"), BAD_NAMES[:3])
def test_job_refuses_a_bad_queue_at_once(name, message):
    with pytest.raises(ValueError, match=r"@job\(queue=\.\.\.\)") as raised:
        job(queue=name)
    assert message in str(raised.value)


def test_the_column_has_a_database_default_for_older_processes():
    """A process of the previous release inserts schedules without the column."""
    with connection.cursor() as cursor:
        columns = {
            c.name: c
            for c in connection.introspection.get_table_description(cursor, Schedule._meta.db_table)
        }
    assert "queue" in columns
    db_default = Schedule._meta.get_field("queue").db_default
    assert getattr(db_default, "value", db_default) == "default"


def test_check_queue_name_returns_a_good_name_and_refuses_a_bad_one():
    assert check_queue_name("reports") == "reports"
    with pytest.raises(InvalidQueue):
        check_queue_name(None)


@pytest.mark.parametrize(
    ("typed", "served"),
    [("billing", ["billing"]), (" billing , reports ", ["billing", "reports"])],
)
def test_parse_queues_reads_names_separated_by_commas(typed, served):
    assert [share.name for share in parse_queues(typed)] == served


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("billing,", "no empty item"),
        ("billing,billing", "names 'billing' twice"),
        ("bad name", "starts with a letter or digit"),
    ],
)
def test_parse_queues_refuses_saying_why(typed, message):
    with pytest.raises(InvalidQueue, match=message):
        parse_queues(typed)
