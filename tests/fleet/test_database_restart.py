"""The engine survives its database going away: it logs, backs off, reconnects and goes on.

On PostgreSQL and MariaDB the server itself is stopped, kept down 2 s and started again,
which cuts every connection: the workers' and this test's own. SQLite has no server: another
connection holds an exclusive lock on the database file for a few seconds instead, so every
read and write of the engine has to wait.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from benchmarks.fleet import (
    no_duplicate_occurrences,
    server_down,
    server_for_this_database,
    sqlite_locked,
    stop_all,
    wait_until,
)
from django_cadence.executors.calling import idempotency_key
from django_cadence.models import Attempt, Schedule, Status
from tests.support.records import (
    backoffs,
    check_occurrences,
    log_problems,
    overlapping_spans,
    spans,
)

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

LEASE, GRACE = 5, 1
SETTINGS = {"CADENCE_LEASE": LEASE, "CADENCE_RECOVERY_GRACE": GRACE, "CADENCE_SHUTDOWN_GRACE": 10}
SERVER_DOWN_SECONDS = 5.0
SQLITE_LOCK_SECONDS = 3.0  # well within the busy timeout of tests/settings.py

# (overlap, executor, payload), every one due each second
SCHEDULES = (
    ("allow", "tests.jobs.noop", {}),
    ("allow", "tests.jobs.noop", {}),
    ("allow", "tests.jobs.sleep_for", {"seconds": 0.5}),
    ("allow", "tests.jobs.fail_n_times", {"n": 1, "key": "restart"}),
    ("skip_if_running", "tests.jobs.noop", {}),
    ("buffer_one", "tests.jobs.noop", {}),
    # Serial schedules whose jobs record their own start and end (``SPANS``): they run longer
    # than their interval, so each is always running or about to, outage included.
    ("skip_if_running", "tests.jobs.record_span", {"seconds": 1.5}),
    ("skip_if_running", "tests.jobs.record_span", {"seconds": 0.7}),
    ("queue", "tests.jobs.record_span", {"seconds": 0.3}),
    ("buffer_one", "tests.jobs.record_span", {"seconds": 1.2}),
)
SPANS = "record_span"


def create_schedules(spans_dir) -> None:
    for i, (overlap, executor, payload) in enumerate(SCHEDULES):
        if executor.endswith(SPANS):
            payload = {**payload, "directory": str(spans_dir)}
        Schedule.objects.create(
            name=f"restart-{i}-{overlap}",
            kind="interval",
            interval=timedelta(seconds=1),
            executor=executor,
            payload=payload,
            overlap=overlap,
            retry_base=timedelta(seconds=0.2),
            retry_cap=timedelta(seconds=1),
        )


def succeeded_since(instant) -> int:
    return Attempt.objects.filter(status=Status.SUCCEEDED, started_at__gt=instant).count()


def test_workers_survive_a_database_outage_and_go_on(worker, tmp_path):
    """Also: dead, not merely disconnected (docs/design.md, "Lost workers"). Every worker's
    session ends with the restart, but every worker lives on: none of their tries is run
    again beside itself, which the serial jobs' own records show."""
    count = 3 if connection.features.has_select_for_update_skip_locked else 1
    spans_dir = tmp_path / "spans"
    spans_dir.mkdir()
    create_schedules(spans_dir)
    fleet = [worker(f"w{n}", max_tick=1, settings=SETTINGS) for n in range(1, count + 1)]
    for child in fleet:
        child.wait_started()
    started = timezone.now()
    wait_until(lambda: succeeded_since(started) >= 8, timeout=30, message="8 successes")
    running = set(Attempt.objects.running().values_list("id", "claim_token"))

    server = server_for_this_database()
    outage = (
        server_down(server, SERVER_DOWN_SECONDS)
        if server
        else sqlite_locked(connection.settings_dict["NAME"], SQLITE_LOCK_SECONDS)
    )
    with outage:
        assert [c.name for c in fleet if not c.alive] == []
    back = timezone.now()

    # New attempts keep succeeding, and every worker is still there.
    wait_until(lambda: succeeded_since(back) >= 8, timeout=40, message="successes after it")
    assert [(c.name, c.returncode) for c in fleet if not c.alive] == []

    # No attempt stays running after its lease expired plus the recovery grace: the tries cut
    # off by the outage were recorded by their worker, or recovered by another.
    settled = back + timedelta(seconds=LEASE + GRACE + 1)
    time.sleep(max(0.0, (settled - timezone.now()).total_seconds()))
    stuck = Attempt.objects.expired(timezone.now() - timedelta(seconds=GRACE + 1))
    assert list(stuck.values_list("id", "lease_until")) == []
    still = Attempt.objects.running().values_list("id", "claim_token")
    assert running.isdisjoint(still), "a try running at the outage is still running"

    assert stop_all(fleet) == {c.name: 0 for c in fleet}
    assert not Attempt.objects.running().exists()

    # What the serial jobs recorded themselves: never two executions of a schedule at once,
    # none run twice, none unrecorded (every succeeded attempt ran once, to its end).
    recorded = spans(spans_dir)
    assert recorded, "no serial job ran"
    assert [s for s in recorded if "end" not in s] == []
    assert overlapping_spans(recorded) == []
    ran_to_end = Counter(span["key"] for span in recorded if not span["cancelled"])
    succeeded = Attempt.objects.filter(
        status=Status.SUCCEEDED, schedule__executor="tests.jobs.record_span"
    )
    keys = {idempotency_key(a.schedule_id, a.occurrence_at, a.trigger) for a in succeeded}
    assert [k for k, n in ran_to_end.items() if n > 1] == []
    assert keys <= set(ran_to_end)
    # No live worker's try was taken from it: every worker came back, took its lock again and
    # re-asserted its tries before any other would recover them.
    lost = [
        (a.pk, entry["worker"], entry.get("error"))
        for a in Attempt.objects.all()
        for entry in a.history
        if entry["result"] == "lost"
    ]
    assert lost == []

    # Invariants 1 and 4 across the outage: one row per occurrence, none missing.
    distinct, total = no_duplicate_occurrences()
    assert distinct == total
    for schedule in Schedule.objects.all():
        check_occurrences(schedule)

    for child in fleet:
        log = child.output()
        if server is None:
            assert log_problems(log) == [], child.name
            continue
        # It saw the outage, said so, and worked again after it.
        allowed = (
            "database unavailable",
            "listener reconnecting",  # PostgreSQL's LISTEN connection, cut with the rest
            # The restart closed the connection holding its session lock (design.md, lost workers).
            "session lock lost",
            "session lock unavailable",  # taking it again failed once: the next probe retries
        )
        assert log_problems(log, allowed=allowed) == [], child.name
        assert "database unavailable" in log, child.name
        # It backed off as it said it would: nothing (a finished try, PostgreSQL's listener
        # coming back) cut a wait short.
        assert all(waited >= announced - 0.05 for announced, waited in backoffs(log)), (
            child.name,
            backoffs(log),
        )
        after = log[log.rindex("database unavailable") :]
        assert "attempt " in after, f"{child.name} did nothing after the outage"

    print(
        f"\n{connection.vendor}: {count} worker(s), {total} attempt rows, "
        f"{succeeded_since(back)} succeeded after the outage, "
        f"{sum(c.output().count('database unavailable') for c in fleet)} outage log lines, "
        f"{len(recorded)} serial executions recorded by the jobs, none overlapping"
    )
