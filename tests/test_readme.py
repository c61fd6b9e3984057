"""The README's first job and first schedule work when copied, and when run twice."""

import re
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from django_cadence.engine.loop import Engine
from django_cadence.executors import allow_list
from django_cadence.models import Attempt, Schedule
from django_cadence.testing import FakeClock

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPET = re.compile(r"<!-- readme-test: (\w+) -->\n```python\n(.*?)```", re.DOTALL)


def snippets() -> dict[str, str]:
    return dict(SNIPPET.findall(README.read_text()))


@pytest.fixture
def myapp(tmp_path, settings):
    """The README's ``myapp/jobs.py`` as an importable package, allowed to run."""
    package = tmp_path / "myapp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "jobs.py").write_text(snippets()["job"])
    sys.path.insert(0, str(tmp_path))
    settings.CADENCE_EXECUTORS = [*settings.CADENCE_EXECUTORS, "myapp.jobs.*"]
    allow_list.clear_cache()
    yield
    sys.path.remove(str(tmp_path))
    for name in [n for n in sys.modules if n == "myapp" or n.startswith("myapp.")]:
        del sys.modules[name]
    allow_list.clear_cache()


def test_the_readme_marks_a_job_and_a_schedule_snippet():
    assert set(snippets()) == {"job", "schedule"}


def test_the_readme_schedule_snippet_runs_twice_and_its_job_succeeds(db, myapp, capsys):
    for _ in range(2):
        exec(snippets()["schedule"], {})

    assert Schedule.objects.count() == 2
    every_minute = Schedule.objects.get(name="report-every-minute")
    engine = Engine(
        clock=FakeClock(timezone.now() + timedelta(minutes=1, seconds=5)),
        worker_id="readme",
        inline=True,
    )
    engine.tick()

    attempt = Attempt.objects.get(schedule=every_minute)
    assert attempt.status == "succeeded", attempt.error
    assert "report sent to ops@example.com, try 1" in capsys.readouterr().out


def test_the_readme_lists_every_page_of_the_docs():
    """Its list of docs names each tutorial, how-to, reference and explanation page."""
    docs = README.parent / "docs"
    pages = {
        str(page.relative_to(README.parent))
        for page in docs.rglob("*.md")
        if page.name not in ("index.md", "README.md") and "_build" not in page.parts
    }
    listed = set(re.findall(r"\]\((docs/[^)#]+\.md)", README.read_text()))
    assert sorted(pages - listed) == []
