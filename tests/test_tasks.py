"""``django_cadence.tasks.enqueue``: a schedule that enqueues a Django task."""

import importlib
import sys
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError

from django_cadence import tasks
from django_cadence.exceptions import Permanent
from django_cadence.executors.allow_list import is_allowed
from django_cadence.executors.calling import AttemptContext, idempotency_key
from django_cadence.models import Attempt, Schedule
from django_cadence.ops import reconcile
from django_cadence.ops.reconcile import InvalidDeclarations
from tests import tasks as test_tasks

importlib.import_module(f"{test_tasks.FRAMEWORK}.signals")  # resets backends on TASKS changes

pytestmark = pytest.mark.django_db

AT = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _tasks_settings(settings):
    settings.CADENCE_TASKS = ["tests.tasks.*"]
    settings.TASKS = {"default": {"BACKEND": test_tasks.DUMMY_BACKEND}}


def backend():
    return test_tasks.send_report.get_backend()


def context(key="cadence:1:schedule:2026-06-01T12:00:00.000000Z"):
    return AttemptContext(
        attempt_id=1, schedule_name="s", occurrence_at=AT, try_number=1, idempotency_key=key
    )


def test_tasks_enqueue_is_registered_as_an_executor():
    assert is_allowed("django_cadence.tasks.enqueue")


def test_tasks_enqueue_passes_the_idempotency_key_and_returns_the_result_id():
    outcome = tasks.enqueue(
        task="tests.tasks.send_report", kwargs={"recipient": "ops"}, context=context()
    )
    (result,) = backend().results
    assert result.kwargs == {
        "recipient": "ops",
        "idempotency_key": "cadence:1:schedule:2026-06-01T12:00:00.000000Z",
    }
    assert outcome == {
        "task": "tests.tasks.send_report",
        "result_id": result.id,
        "status": "READY",
        "backend": "default",
        "queue_name": "default",
    }


def test_tasks_enqueue_leaves_kwargs_alone_for_a_task_without_the_key():
    tasks.enqueue(task="tests.tasks.double", args=[21], context=context())
    (result,) = backend().results
    assert (result.args, result.kwargs) == ([21], {})


def test_tasks_enqueue_through_the_immediate_backend_runs_it(settings):
    settings.TASKS = {"default": {"BACKEND": test_tasks.IMMEDIATE_BACKEND}}
    outcome = tasks.enqueue(task="tests.tasks.double", args=[2], context=context())
    assert outcome["status"] == "SUCCESSFUL"


def test_tasks_enqueue_options_choose_queue_and_priority(settings):
    settings.TASKS = {
        "default": {"BACKEND": test_tasks.DUMMY_BACKEND, "QUEUES": ["default", "reports"]}
    }
    outcome = tasks.enqueue(
        task="tests.tasks.double", args=[1], queue_name="reports", priority=5, context=context()
    )
    (result,) = backend().results
    assert (result.task.queue_name, result.task.priority) == ("reports", 5)
    assert outcome["queue_name"] == "reports"


def test_tasks_path_outside_the_allow_list_is_refused_before_import():
    with pytest.raises(Permanent, match="not allowed"):
        tasks.enqueue(task="tests.never_imported_tasks.x", context=context())
    assert "tests.never_imported_tasks" not in sys.modules
    with pytest.raises(Permanent, match="not allowed"):
        tasks.enqueue(task="os.system", context=context())


def test_tasks_executors_allow_list_allows_tasks_too(settings):
    settings.CADENCE_TASKS = []
    settings.CADENCE_EXECUTORS = ["tests.jobs.*", "tests.tasks.double"]
    tasks.enqueue(task="tests.tasks.double", args=[1], context=context())
    assert len(backend().results) == 1


def test_tasks_plain_function_is_not_a_task():
    with pytest.raises(Permanent, match="not a task"):
        tasks.enqueue(task="tests.tasks.not_a_task", context=context())


def test_tasks_reexported_from_another_module_is_refused():
    with pytest.raises(Permanent, match=r"defined in 'tests\.more_tasks'"):
        tasks.enqueue(task="tests.tasks.reexported", context=context())


def test_tasks_missing_module_is_a_clear_error():
    with pytest.raises(Permanent, match="cannot be imported"):
        tasks.enqueue(task="tests.tasks.nope", context=context())


def test_tasks_without_any_tasks_framework_says_what_to_install(monkeypatch):
    with monkeypatch.context() as patched:  # undone before the settings are restored
        for name in ("django.tasks", "django_tasks.base"):
            patched.setitem(sys.modules, name, None)
        assert tasks.task_classes() == ()
        with pytest.raises(Permanent, match=r"pip install \"django-cadence-scheduler\[tasks\]\""):
            tasks.enqueue(task="tests.tasks.double", context=context())


def test_tasks_periodic_task_is_one_line_in_settings(settings, engine, clock):
    settings.CADENCE_SCHEDULES = {
        "report": {"interval": 60, "task": "tests.tasks.send_report", "kwargs": {"recipient": "a"}}
    }
    reconcile.reconcile(clock.now())
    schedule = Schedule.objects.get(name="report")
    assert schedule.executor == "django_cadence.tasks.enqueue"
    assert schedule.payload == {"task": "tests.tasks.send_report", "kwargs": {"recipient": "a"}}
    clock.advance(timedelta(seconds=60))
    engine.tick()
    attempt = Attempt.objects.get(schedule=schedule)
    assert attempt.status == "succeeded"
    (result,) = backend().results
    assert attempt.outcome["result_id"] == result.id
    key = idempotency_key(schedule.pk, attempt.occurrence_at, "schedule")
    assert result.kwargs == {"recipient": "a", "idempotency_key": key}


def test_tasks_declared_task_is_checked_when_reconciled(settings):
    settings.CADENCE_SCHEDULES = {"x": {"cron": "@daily", "task": "os.system"}}
    with pytest.raises(InvalidDeclarations, match=r"'x'.*task: Task 'os.system' is not allowed"):
        reconcile.reconcile(AT)
    settings.CADENCE_SCHEDULES = {
        "y": {"cron": "@daily", "task": "tests.tasks.double", "payload": {}}
    }
    with pytest.raises(InvalidDeclarations, match="payload: give either task"):
        reconcile.reconcile(AT)


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        ({"task": "os.system"}, "Task 'os.system' is not allowed"),
        ({"task": "tests.tasks.not_a_task"}, "not a task; decorate the function with @task"),
        ({"task": "tests.tasks.double"}, "cannot take these args and kwargs"),
        ({"task": "tests.tasks.double", "kwargs": {"y": 1}}, "argument: 'x'); it takes x."),
        ({"task": "tests.tasks.double", "args": [1, 2]}, "cannot take these args and kwargs"),
        ({"task": "tests.tasks.double", "args": {"x": 1}}, "args must be a JSON list"),
        ({"task": "tests.tasks.double", "x": 1}, "put the task's own arguments in kwargs"),
        ({"kwargs": {"x": 1}}, "needs the task to enqueue"),
    ],
)
def test_tasks_enqueue_payload_is_checked_when_saved_in_the_orm(payload, words):
    with pytest.raises(ValidationError) as excinfo:
        Schedule.objects.create(
            name="enqueue", cron="@daily", executor="django_cadence.tasks.enqueue", payload=payload
        )
    assert words in " ".join(excinfo.value.message_dict["payload"])
    assert not Schedule.objects.exists()


def test_tasks_enqueue_payload_that_fits_is_saved():
    for payload in (
        {"task": "tests.tasks.double", "args": [2]},
        {"task": "tests.tasks.double", "kwargs": {"x": 2}},
        {"task": "tests.tasks.send_report", "kwargs": {"recipient": "a"}},  # key passed later
    ):
        Schedule.objects.create(
            name=str(payload),
            cron="@daily",
            executor="django_cadence.tasks.enqueue",
            payload=payload,
        )
    assert Schedule.objects.count() == 3


def test_tasks_enqueue_payload_is_checked_on_the_admin_form(admin_client):
    from django.urls import reverse

    response = admin_client.post(
        reverse("admin:django_cadence_schedule_add"),
        {
            "name": "enqueue",
            "enabled": "on",
            "executor": "django_cadence.tasks.enqueue",
            "payload": '{"task": "tests.tasks.double", "kwargs": {"y": 1}}',
            "kind": "cron",
            "cron": "@daily",
            "timezone": "UTC",
            "overlap": "skip_if_running",
            "misfire": "fire_once",
            "jitter": "0",
        },
    )
    assert response.status_code == 200
    page = " ".join(response.content.decode().split())
    assert "Task &#x27;tests.tasks.double&#x27; cannot take these args and kwargs" in page
    assert not Schedule.objects.exists()
