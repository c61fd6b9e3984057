"""``cadence_import --settings-block`` prints Python that runs nothing but its assignment.

The block is pasted into settings.py, while what it prints comes from rows anyone with
django-celery-beat's admin can edit: names, tasks, arguments, descriptions, queues. Each text
is escaped where it lands (a comment, a key, a value), so a name such as
``"x\\nimport os; os.system(...)\\n#"`` stays inside its comment or string.
"""

import ast
import json

import pytest
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask, SolarSchedule

from benchmarks.fleet import database_env
from tests.support.commands import run_django

pytestmark = pytest.mark.django_db(transaction=True)

# Line ends Python, an editor or a terminal may honour, and quotes that end string literals.
BREAKS = {
    "newline": "\n",
    "carriage-return": "\r",
    "crlf": "\r\n",
    "line-separator": "\u2028",
    "form-feed": "\x0c",
    "next-line": "\x85",
    "quotes": "'''\"\"\"\n",
}
MERGE = 'globals().get("CADENCE_SCHEDULES", {})'


def hostile(marker, tag, brk):
    """Text that, if printed raw, ends its comment or string and writes ``marker``."""
    code = f"open({str(marker)!r}, 'a').write({tag!r})"
    return f"{tag}{brk}{code}{brk}#"


def make_hostile_rows(marker):
    """Rows with a hostile text in every place the import prints, one set per line break."""
    every_hour = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    solar = SolarSchedule.objects.create(event="sunset", latitude=48.85, longitude=2.35)
    crontab = CrontabSchedule.objects.create(timezone="Europe/Paris", minute="5")
    for key, brk in BREAKS.items():

        def text(tag, key=key, brk=brk):
            return hostile(marker, f"{key}:{tag}", brk)

        # A refused row: its name goes into a "# Not imported" comment.
        PeriodicTask.objects.create(
            name=text("refused-name"), task="tests.peers.tasks.ping", solar=solar
        )
        # A refused row whose reason quotes its task path.
        PeriodicTask.objects.create(
            name=f"{key}:bad-task", task=text("task-path"), interval=every_hour, args='["a"]'
        )
        # An imported row, disabled in beat: its name is a key, its texts notes and values.
        PeriodicTask.objects.create(
            name=text("imported-name"),
            task="tests.peers.tasks.send_report",
            crontab=crontab,
            kwargs=json.dumps({"recipient": text("kwarg-value")}),
            queue=text("queue"),
            exchange=text("exchange"),
            routing_key=text("routing-key"),
            description=text("description"),
            enabled=False,
        )
        # A payload key that is itself hostile.
        PeriodicTask.objects.create(
            name=f"{key}:hostile-key",
            task="tests.peers.tasks.send_report",
            interval=every_hour,
            kwargs=json.dumps({"recipient": "a", text("kwarg-key"): 1}),
        )


def assert_only_the_assignment(block):
    """One statement: ``CADENCE_SCHEDULES = {**<merge>, 'name': {literal}, ...}``."""
    tree = ast.parse(block)
    assert len(tree.body) == 1, ast.dump(tree)
    (statement,) = tree.body
    assert isinstance(statement, ast.Assign), ast.dump(statement)
    assert [ast.dump(t) for t in statement.targets] == [
        ast.dump(ast.Name("CADENCE_SCHEDULES", ast.Store()))
    ]
    assert isinstance(statement.value, ast.Dict)
    keys, values = statement.value.keys, statement.value.values
    assert keys[0] is None
    assert ast.dump(values[0]) == ast.dump(ast.parse(MERGE, mode="eval").body)
    for key, value in zip(keys[1:], values[1:], strict=True):
        assert isinstance(key, ast.Constant)
        assert isinstance(key.value, str)
        assert isinstance(ast.literal_eval(value), dict)


def run_in_a_sandbox(block):
    namespace: dict[str, object] = {}
    exec(compile(block, "settings.py", "exec"), namespace)
    assert set(namespace) == {"__builtins__", "CADENCE_SCHEDULES"}
    return namespace["CADENCE_SCHEDULES"]


@pytest.mark.parametrize("options", [(), ("--paused",)], ids=["plain", "paused"])
def test_settings_block_with_hostile_texts_runs_only_its_assignment(tmp_path, options):
    marker = tmp_path / "pwned"
    make_hostile_rows(marker)
    env = {**database_env(), "DJANGO_SETTINGS_MODULE": "tests.peers.settings"}
    result = run_django("cadence_import", "celery-beat", "--settings-block", *options, env=env)
    assert result.returncode == 0, result.stderr
    block = result.stdout

    assert_only_the_assignment(block)
    schedules = run_in_a_sandbox(block)
    assert not marker.exists()
    # Every line of the block is a line of Python: no text split a line or hid a break.
    assert block.splitlines() == block.split("\n")[:-1]
    assert all(line.isprintable() for line in block.split("\n"))
    for key, brk in BREAKS.items():
        # The texts are kept, escaped, not dropped.
        imported = schedules[hostile(marker, f"{key}:imported-name", brk)]
        assert imported["payload"] == {"recipient": hostile(marker, f"{key}:kwarg-value", brk)}
        assert imported["metadata"] == {"description": hostile(marker, f"{key}:description", brk)}
        assert imported["start_paused"] == "disabled in django-celery-beat"
        for tag in ("refused-name", "task-path", "queue", "exchange", "routing-key", "kwarg-key"):
            assert f"{key}:{tag}" in block


def test_the_diff_shows_hostile_texts_on_their_own_lines(tmp_path):
    make_hostile_rows(tmp_path / "pwned")
    env = {**database_env(), "DJANGO_SETTINGS_MODULE": "tests.peers.settings"}
    result = run_django("cadence_import", "celery-beat", env=env)
    assert result.returncode == 0, result.stderr
    assert not [line for line in result.stdout.split("\n") if line.startswith("open(")]
    assert all(line.isprintable() for line in result.stdout.split("\n"))
