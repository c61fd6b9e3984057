"""The claim's prepared read: compiled once, then run with new arguments."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_cadence.engine import leases, planner
from django_cadence.models import Attempt
from django_cadence.store.prepared import PreparedRead

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


def test_a_prepared_read_returns_what_the_queryset_returns_for_each_argument(schedule_at, clock):
    for i in range(3):
        schedule_at(interval=MINUTE * (i + 1), overlap="allow", payload={"n": i})
    planner.plan_due(clock.advance(MINUTE * 3))
    read = PreparedRead(
        leases._candidates, leases._CLAIM_FIELDS, Attempt._meta.get_field("retry_at")
    )
    for due_by in (clock.now() - MINUTE * 3, clock.now() - MINUTE * 2, clock.now()):
        with transaction.atomic():
            expected = list(leases._candidates((10, None), due_by))
            got = read.rows("default", (10, None), due_by)
        assert [tuple(row) for row in got] == expected
    row = got[0]
    assert row.schedule_payload == {"n": 0}  # JSON decoded by the field's converter
    assert row.occurrence_at.tzinfo is not None  # aware, like the ORM's


@pytest.mark.parametrize("together", [True, False], ids=["one round trip", "two"])
def test_a_setup_statement_runs_before_the_read_in_its_transaction(
    schedule_at, clock, monkeypatch, together
):
    """Sent with the read where the driver allows it, else just before; same rows either way."""
    from django_cadence.store import prepared

    if not together:
        monkeypatch.setattr(prepared, "_sends_statements_together", lambda cursor: False)
    schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE))
    read = PreparedRead(
        leases._candidates, leases._CLAIM_FIELDS, Attempt._meta.get_field("retry_at")
    )
    setup, probe = {
        "postgresql": ("SET LOCAL enable_sort = off", "SELECT current_setting('enable_sort')"),
        "mysql": ("SET @cadence_probe = 'off'", "SELECT @cadence_probe"),
    }.get(connection.vendor, ("PRAGMA cache_size = -4000", "PRAGMA cache_size"))
    with transaction.atomic():
        got = read.rows("default", (10, None), clock.now(), setup=setup)
        with connection.cursor() as cursor:
            cursor.execute(probe)
            (value,) = cursor.fetchone()
    assert [row.schedule_id for row in got] == list(
        Attempt.objects.values_list("schedule_id", flat=True)
    )
    assert str(value) in {"off", "-4000"}


def test_a_prepared_read_compiles_once_per_shape(clock):
    compiled = []
    build = leases._candidates

    def counting_build(shape, due_by):
        compiled.append(shape)
        return build(shape, due_by)

    read = PreparedRead(counting_build, leases._CLAIM_FIELDS, Attempt._meta.get_field("retry_at"))
    with transaction.atomic():
        for _ in range(3):
            read.rows("default", (5, None), clock.now())
        read.rows("default", (6, None), clock.now())
    assert [window for window, _ in compiled] == [
        5,
        5,
        6,
        6,
    ]  # two compilations find the argument's parameter


def test_the_claim_read_locks_its_rows_and_their_schedules():
    if connection.vendor == "sqlite":
        assert not connection.features.has_select_for_update
        return
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        leases._CANDIDATES.rows(
            "default",
            (3, None),
            Attempt._meta.get_field("retry_at").to_python("2026-01-01T00:00:00+00:00"),
        )
    (sql,) = [q["sql"] for q in queries if "SELECT" in q["sql"]]
    assert sql.rstrip().endswith("FOR UPDATE SKIP LOCKED")  # no OF: both tables' rows
    assert "JOIN" in sql


def test_a_read_without_an_argument_is_compiled_once(schedule_at, clock):
    compiled = []

    def build(shape, value):
        compiled.append((shape, value))
        return Attempt.objects.order_by("occurrence_at").values_list("occurrence_at")[:shape]

    read = PreparedRead(build, ("occurrence_at",), None)
    assert read.rows("default", 1) == []
    schedule_at(interval=MINUTE, overlap="allow")
    planner.plan_due(clock.advance(MINUTE * 2))
    assert [row.occurrence_at for row in read.rows("default", 1)] == [clock.now() - MINUTE]
    assert compiled == [(1, None)]
