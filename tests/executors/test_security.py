"""The allow-list at save and at run, no pickle/eval/exec, escaped logs, redacted secrets.

Complements ``test_admin_safety.py`` (every admin page escapes job text and hides secrets)
with what an attacker who can write a schedule, or a row, would try: a path to ``os.system``
and friends (refused when saved, refused again when run, never imported, never called), a
schedule name that forges log lines, a job whose error carries its payload's password, and
the admin pages that page does not cover (workers, action messages, hostile stored specs).
"""

from __future__ import annotations

import builtins
import io
import logging
import os
import re
import subprocess
import tokenize
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

import django_cadence
from django_cadence.engine.loop import Engine
from django_cadence.executors import allow_list
from django_cadence.executors.redaction import REDACTED
from django_cadence.models import Attempt, Schedule, Worker

pytestmark = pytest.mark.django_db

XSS = "<img src=x onerror=alert(1)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"
SECRET = "hunter2"
MINUTE = timedelta(minutes=1)
# A path outside the allow-list "is not allowed"; one inside it that names a module or a
# class (``tests.jobs.os``) is refused as "not a function or callable object".
REFUSED = re.compile(r"is not allowed|not a function or callable object")

HOSTILE_PATHS = [
    "os.system",
    "subprocess.run",
    "subprocess.Popen",
    "builtins.eval",
    "builtins.exec",
    "builtins.__import__",
    "os",
    "pickle.loads",
    "tests.jobs.noop ",  # trailing space
    "tests.jobs. noop",  # a space inside
    "tests jobs noop",
    "tests.jobs.nöop",  # a non-ASCII identifier
    "tests.jobs.noop\n",
    "tests.jobs.noop;os.system",
    "tests.jobs.__class__",
    "tests.jobs..noop",
    "tests.jobs.*",
    "tests.jobs",  # the module itself, one level above the pattern
    "tests.settings.SECRET_KEY",  # outside the pattern
    "django_cadence.services.trigger",
    "tests.jobs.job",  # a function imported into tests.jobs, defined elsewhere
    "tests.jobs.os",
    # A module nothing has loaded: whether it has the name is never found out by importing it.
    "tests.discovery.reports.nightly_report",
    "tests.discovery.reports.does_not_exist",
]


@pytest.fixture
def guards(monkeypatch):
    """Spies on what an attack would call: any call fails the test."""
    calls: list[str] = []

    def spy(name):
        def called(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} was called with {args!r}")

        return called

    monkeypatch.setattr(os, "system", spy("os.system"))
    monkeypatch.setattr(subprocess, "run", spy("subprocess.run"))
    monkeypatch.setattr(subprocess, "Popen", spy("subprocess.Popen"))
    monkeypatch.setattr(builtins, "eval", spy("builtins.eval"))
    imported: list[str] = []
    real_import = allow_list.importlib.import_module

    def import_module(name, package=None):
        imported.append(name)
        return real_import(name, package)

    monkeypatch.setattr(allow_list.importlib, "import_module", import_module)
    allow_list.clear_cache()
    yield calls, imported
    allow_list.clear_cache()


def _allowed_module(path: str) -> bool:
    return path.startswith("tests.jobs.") and path.count(".") == 2


# --- the allow-list at save ------------------------------------------------------------------


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_a_path_outside_the_allow_list_is_refused_at_save_and_nothing_is_imported(path, guards):
    calls, imported = guards
    before = Schedule.objects.count()
    fields = {
        "name": "attack",
        "kind": "interval",
        "interval": MINUTE,
        "executor": path,
        "payload": {"command": "touch /tmp/pwned"},
    }

    with pytest.raises(ValidationError) as full_clean:
        Schedule(**fields).full_clean()
    with pytest.raises(ValidationError) as create:
        Schedule.objects.create(**fields)

    for error in (full_clean.value, create.value):
        assert "executor" in error.message_dict, error.message_dict
        assert REFUSED.search(" ".join(error.message_dict["executor"]))
    assert Schedule.objects.count() == before
    assert calls == []
    # Nothing outside the allow-list is imported to validate it.
    assert [m for m in imported if not m.startswith("tests.jobs")] == []


def test_the_admin_form_offers_only_allowed_executors_and_refuses_others(guards):
    from django_cadence.admin.forms import ScheduleForm

    form = ScheduleForm(
        data={
            "name": "attack",
            "enabled": "on",
            "executor": "os.system",
            "payload": '{"command": "id"}',
            "kind": "interval",
            "interval": "60",
            "timezone": "UTC",
            "overlap": "allow",
            "misfire": "fire_once",
            "jitter": "0",
        }
    )
    assert not form.is_valid()
    assert "executor" in form.errors
    choices = [value for _, group in form.fields["executor"].choices[1:] for value, _ in group]
    assert choices
    assert all(allow_list.is_allowed(value) for value in choices)
    assert "os.system" not in choices
    assert not Schedule.objects.exists()


# --- the allow-list at run -------------------------------------------------------------------


def _written_directly(path: str, now: datetime, **fields) -> Schedule:
    """A schedule row that skipped validation (bulk_create, raw SQL, a bad migration)."""
    (row,) = Schedule.objects.bulk_create(
        [
            Schedule(
                name=f"direct {path!r}"[:200],
                kind="interval",
                interval=MINUTE,
                executor=path,
                payload={"command": "touch /tmp/pwned"},
                created_at=now - MINUTE,
                enabled_at=now - MINUTE,
                next_run_at=now,
                max_attempts=1,
                **fields,
            )
        ]
    )
    return row


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_a_row_written_past_validation_is_refused_at_run(path, guards, clock):
    calls, imported = guards
    schedule = _written_directly(path, clock.now())
    engine = Engine(clock=clock, worker_id="w1", inline=True)

    engine.tick()

    attempt = Attempt.objects.get(schedule=schedule)
    assert attempt.status == "dead_letter"
    assert REFUSED.search(attempt.error), attempt.error
    assert attempt.outcome is None
    assert calls == []
    assert [m for m in imported if not m.startswith("tests.jobs")] == []


def test_a_path_taken_off_the_allow_list_stops_running(guards, clock, settings):
    schedule = _written_directly("tests.jobs.record_call", clock.now())
    Schedule.objects.filter(pk=schedule.pk).update(payload={"label": "x"})
    settings.CADENCE_EXECUTORS = ["tests.jobs.noop"]
    from tests import jobs

    jobs.CALLS.clear()

    Engine(clock=clock, worker_id="w1", inline=True).tick()

    attempt = Attempt.objects.get(schedule=schedule)
    assert attempt.status == "dead_letter"
    assert "is not allowed" in attempt.error
    assert jobs.CALLS == []


def test_process_isolation_checks_the_allow_list_before_it_spawns(guards, clock):
    from django_cadence.engine import claims, execution

    schedule = _written_directly("os.system", clock.now())
    claim = claims.Claim(
        attempt_id=0,
        token="t",
        schedule_id=schedule.pk,
        schedule_name=schedule.name,
        worker="w1",
        executor="os.system",
        payload={"command": "id"},
        occurrence_at=clock.now(),
        trigger="schedule",
        tries=1,
        recoveries=0,
        started_at=clock.now(),
        max_attempts=1,
        retry_base=MINUTE,
        retry_cap=MINUTE,
        max_runtime=MINUTE,
        delivery="at_least_once",
        isolation="process",
        history=[],
        pause_after_failures=None,
    )
    result = execution.run_try(claim, clock.now)
    assert result.kind == "permanent"  # dead-lettered at once: retrying cannot allow it
    assert "is not allowed" in result.error
    assert guards[0] == []


# --- no pickle, eval or exec in the package ---------------------------------------------------

FORBIDDEN_NAMES = {"pickle", "cPickle", "_pickle", "marshal", "shelve", "eval", "exec"}


def test_the_package_never_names_pickle_eval_or_exec_in_code():
    """Tokens, not text: the words may appear in comments and docstrings, never in code."""
    root = Path(django_cadence.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME and token.string in FORBIDDEN_NAMES:
                found.append(f"{path.relative_to(root)}:{token.start[0]}: {token.string}")
    assert found == []
    assert len(list(root.rglob("*.py"))) > 20  # the walk saw the package


# --- log lines: one line each, control characters escaped --------------------------------------

CONTROL = "\n2026-01-01 00:00:00 ERROR forged line\r\x1b[31m\u2028\u202e"


def test_log_lines_escape_control_characters_from_names_and_errors(clock, caplog):
    """A schedule name (written past validation) and a job error carrying newlines, ANSI
    escapes, line separators and a bidi override: every log line stays one visible line."""
    schedule = _written_directly("tests.jobs.raise_error", clock.now())
    Schedule.objects.filter(pk=schedule.pk).update(
        name=f"evil{CONTROL}", payload={"message": f"boom{CONTROL}"}
    )
    with caplog.at_level(logging.DEBUG, logger="django_cadence"):
        Engine(clock=clock, worker_id="w1", inline=True).tick()

    messages = [r.getMessage() for r in caplog.records if r.name.startswith("django_cadence")]
    assert any("attempt dead_letter" in m for m in messages), messages
    for message in messages:
        assert not set(message) & set("\n\r\x1b\u2028\u202e"), repr(message)
    assert any("evil\\n2026-01-01" in m for m in messages)


# --- secrets: redacted in stored errors, history and logs ---------------------------------------


def test_a_secret_in_an_error_message_is_redacted_in_the_row_history_and_logs(clock, caplog):
    schedule = _written_directly("tests.jobs.raise_with_kwargs", clock.now())
    Schedule.objects.filter(pk=schedule.pk).update(
        payload={
            "user": "bob",
            "password": SECRET,
            "api_key": SECRET,
            "headers": {"Authorization": f"Bearer {SECRET}"},
        }
    )
    with caplog.at_level(logging.DEBUG):
        Engine(clock=clock, worker_id="w1", inline=True).tick()

    attempt = Attempt.objects.get(schedule=schedule)
    assert attempt.status == "dead_letter"
    assert "could not log in" in attempt.error
    assert REDACTED in attempt.error
    assert SECRET not in attempt.error
    assert SECRET not in str(attempt.history)
    assert "'user': 'bob'" in attempt.error  # only the secrets go
    assert SECRET not in caplog.text
    assert "could not log in" in caplog.text


# --- admin pages test_admin_safety.py does not cover --------------------------------------------


def _assert_safe(html: str) -> None:
    assert XSS not in html
    assert "onerror=alert(1)>" not in html
    assert SECRET not in html


def test_the_workers_admin_escapes_worker_ids_and_hosts(admin_client):
    now = datetime.now(UTC)
    worker = Worker.objects.create(
        worker_id=f"w {XSS}",
        host=f"host {XSS}",
        pid=1,
        started_at=now,
        heartbeat_at=now,
    )
    for url in (
        reverse("admin:django_cadence_worker_changelist"),
        reverse("admin:django_cadence_worker_change", args=[worker.pk]),
    ):
        response = admin_client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        _assert_safe(html)
        assert ESCAPED in html


def test_the_schedule_list_escapes_hostile_stored_specs(admin_client, make_schedule):
    """Rows written past validation: a cron, time zone and executor that are markup."""
    cron = make_schedule(name="hostile cron")
    Schedule.objects.filter(pk=cron.pk).update(
        kind="cron", interval=None, cron=XSS, timezone=XSS, executor=XSS
    )
    response = admin_client.get(reverse("admin:django_cadence_schedule_changelist"))
    assert response.status_code == 200
    _assert_safe(response.content.decode())
    response = admin_client.get(reverse("admin:django_cadence_schedule_change", args=[cron.pk]))
    assert response.status_code == 200
    _assert_safe(response.content.decode())


@pytest.mark.parametrize("action", ["run_now", "pause", "resume"])
def test_admin_action_messages_escape_schedule_names(admin_client, make_schedule, action):
    schedule = make_schedule(name=f"evil {XSS}", enabled=action != "resume")
    response = admin_client.post(
        reverse("admin:django_cadence_schedule_changelist"),
        {"action": action, "_selected_action": [str(schedule.pk)], "index": "0"},
        follow=True,
    )
    assert response.status_code == 200
    html = response.content.decode()
    _assert_safe(html)
    assert ESCAPED in html


def test_the_preview_answers_json_that_no_browser_renders_as_html(admin_client):
    response = admin_client.get(
        reverse("admin:django_cadence_schedule_preview"),
        {"kind": "cron", "cron": XSS, "timezone": XSS, "executor": XSS},
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["occurrences"] == []
    assert body["errors"]
