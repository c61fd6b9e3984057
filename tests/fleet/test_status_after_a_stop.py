"""What ``cadence_status`` and the admin say once the workers are gone: what is true.

After a clean Ctrl+C, when the last worker stopped (not "no heartbeat in the last 90 s",
twelve seconds after its last one); after a ``kill -9`` on PostgreSQL and MariaDB, the worker
is lost at once, its session lock gone with its session (docs/design.md, "Lost workers"),
not shown live until its heartbeat times out.
"""

from __future__ import annotations

import json
import signal

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from benchmarks.fleet import child_env, database_env, wait_until
from django_cadence.models import Worker
from django_cadence.ops.status import worker_timeout
from tests.support.commands import run_django

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

servers_only = pytest.mark.skipif(
    connection.vendor == "sqlite", reason="session locks: PostgreSQL and MariaDB"
)


def cadence_status(*args):
    return run_django(
        "cadence_status", "--settings=tests.settings", *args, env=child_env(database_env())
    )


def registered(name, **fields):
    return wait_until(
        lambda: Worker.objects.filter(worker_id=name, **fields).first(),
        message=f"worker {name} registered",
    )


def test_after_a_clean_stop_status_says_when_the_last_worker_stopped(worker, due_schedule):
    child = worker("w-clean").wait_started()
    registered("w-clean")
    child.send(signal.SIGINT)  # Ctrl+C
    assert child.wait(30) == 0, child.output()
    stopped_at = Worker.objects.get(worker_id="w-clean").stopped_at
    assert stopped_at is not None
    due_schedule()

    check = cadence_status("--check")
    assert check.returncode == 2, check.stderr
    first = check.stdout.splitlines()[0]
    assert first.startswith(
        "CADENCE CRITICAL - no_worker: no worker is running while work is due: the last one "
        "stopped "
    )
    assert "heartbeat in the last" not in check.stdout
    assert f"at {stopped_at:%Y-%m-%d %H:%M:%S} UTC" in first

    plain = cadence_status()
    assert plain.returncode == 0, plain.stderr
    assert "Workers: 0 live, 0 lost; the last worker to stop stopped " in plain.stdout
    assert f"at {stopped_at:%Y-%m-%d %H:%M:%S} UTC" in plain.stdout
    as_json = json.loads(cadence_status("--json").stdout)
    assert as_json["workers"] == []
    assert as_json["last_stopped_at"] == stopped_at.isoformat()


@servers_only
def test_a_killed_worker_is_lost_at_once_where_its_session_lock_is_gone(
    worker, due_schedule, admin_client
):
    survivor = worker("w-survivor").wait_started()
    doomed = worker("w-doomed").wait_started()
    registered("w-survivor", session_lock=True)
    registered("w-doomed", session_lock=True)
    doomed.kill()  # kill -9: no drain, no stop recorded; the server ends its session

    def lost_in_status():
        workers = json.loads(cadence_status("--json").stdout)["workers"]
        states = {w["worker_id"]: (w["state"], w["session_gone"]) for w in workers}
        return states if states.get("w-doomed") == ("lost", True) else None

    states = wait_until(lost_in_status, message="w-doomed lost in cadence_status --json")
    assert states["w-survivor"] == ("live", False)
    doomed_row = Worker.objects.get(worker_id="w-doomed")
    assert doomed_row.stopped_at is None
    assert timezone.now() - doomed_row.heartbeat_at < worker_timeout()  # not its heartbeat

    plain = cadence_status().stdout
    row = next(line for line in plain.splitlines() if "w-doomed" in line)
    assert row.strip().startswith("lost (session gone)")
    assert "Workers: 1 live, 1 lost" in plain

    page = admin_client.get(reverse("admin:django_cadence_worker_changelist")).content.decode()
    assert '<span class="cadence-worker-lost">lost</span>' in page
    assert page.count('<span class="cadence-worker-live">live</span>') == 1
    live_only = admin_client.get(
        reverse("admin:django_cadence_worker_changelist") + "?state=live"
    ).content.decode()
    assert "w-survivor" in live_only
    assert "w-doomed" not in live_only
    overview = admin_client.get(
        reverse("admin:django_cadence_overview_changelist")
    ).content.decode()
    assert "Workers: 1 live, 1 lost" in overview

    survivor.terminate()
    assert survivor.wait(30) == 0
    due_schedule()
    check = cadence_status("--check")
    assert check.returncode == 2
    # The survivor stopped last: the message is about it.
    assert "no worker is running while work is due: the last one stopped " in check.stdout


@servers_only
def test_check_says_a_killed_last_workers_session_ended(worker, due_schedule):
    doomed = worker("w-alone").wait_started()
    registered("w-alone", session_lock=True)
    doomed.kill()
    due_schedule()

    def critical():
        result = cadence_status("--check")
        return result if result.returncode == 2 else None

    first = wait_until(critical, message="no_worker after kill -9").stdout.splitlines()[0]
    assert (
        "no_worker: no worker is running while work is due: the last one's session ended "
        "without a stop (killed or cut off); its last heartbeat was "
    ) in first
