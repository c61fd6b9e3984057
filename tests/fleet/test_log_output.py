"""``run_cadence`` shows its own lines whatever the root logger's level, as ``runserver``
does, unless the project configures the ``django_cadence`` loggers itself."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.fleet import Worker, child_env, database_env, run_cadence_args
from django_cadence.models import Status
from tests.support.attempts import attempt_of

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

ROOT_AT_WARNING = """
from tests.settings import *

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
"""

ROOT_HANDLER_AT_WARNING = """
from tests.settings import *

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "ROOT %(levelname)s %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "level": "WARNING", "formatter": "plain"}
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
}
"""

CADENCE_AT_WARNING = """
from tests.settings import *

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {"django_cadence": {"level": "WARNING"}},
}
"""

JSON_LINES = """
from tests.settings import *

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "django_cadence.log_output.JsonFormatter"}},
    "handlers": {"json": {"class": "logging.StreamHandler", "formatter": "json"}},
    "loggers": {"django_cadence": {"handlers": ["json"], "level": "INFO", "propagate": False}},
}
"""


def run_once(tmp_path, settings_text, name):
    """``run_cadence --once`` under a settings module with ``settings_text``; its output."""
    (tmp_path / f"{name}_settings.py").write_text(settings_text)
    env = child_env(database_env())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    args = run_cadence_args(f"{name}_settings", name, once=True)
    child = Worker(name, args, env, tmp_path)
    assert child.wait(60) == 0, child.output()
    return child.output()


@pytest.mark.parametrize("settings_text", [ROOT_AT_WARNING, ROOT_HANDLER_AT_WARNING])
def test_log_output_shows_engine_lines_though_the_root_logger_is_at_warning(
    tmp_path, due_schedule, settings_text
):
    schedule = due_schedule()
    output = run_once(tmp_path, settings_text, "quiet-root")
    assert attempt_of(schedule).status == Status.SUCCEEDED
    assert "engine started worker=quiet-root" in output
    assert f"attempt started id={attempt_of(schedule).pk} schedule={schedule.name}" in output
    assert "attempt succeeded" in output
    assert output.count("engine started") == 1  # once, not once per handler


def test_log_output_respects_a_project_that_configures_django_cadence(tmp_path, due_schedule):
    schedule = due_schedule()
    output = run_once(tmp_path, CADENCE_AT_WARNING, "configured")
    assert attempt_of(schedule).status == Status.SUCCEEDED
    assert "engine started" not in output
    assert "attempt succeeded" not in output


def test_log_output_json_lines_carry_the_key_value_pairs_as_fields(tmp_path, due_schedule):
    schedule = due_schedule()
    output = run_once(tmp_path, JSON_LINES, "json")
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    succeeded = next(line for line in lines if line["message"].startswith("attempt succeeded"))
    assert succeeded["logger"] == "django_cadence.events"
    assert succeeded["level"] == "INFO"
    assert succeeded["id"] == str(attempt_of(schedule).pk)
    assert succeeded["schedule"] == schedule.name
    assert succeeded["time"].endswith("+00:00")
    assert any(line["message"].startswith("engine started") for line in lines)
