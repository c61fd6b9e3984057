"""The benchmark's phase timers: they wrap the engine's steps where callers look them up,
and the harness sums the workers' totals per try."""

import json

from benchmarks.app import phases
from benchmarks.profile import summarize_phases


def test_every_phase_names_a_callable_that_exists():
    for module_name, attribute, _ in phases.PHASES:
        owner, name = phases.resolve(module_name, attribute)
        assert callable(getattr(owner, name)), attribute


def test_installed_timers_count_calls_and_write_them_at_exit(tmp_path, monkeypatch):
    registered = []
    monkeypatch.setattr(phases.atexit, "register", registered.append)
    monkeypatch.setattr(phases, "_totals", {})
    for module_name, attribute, _ in phases.PHASES:  # restored by monkeypatch afterwards
        owner, name = phases.resolve(module_name, attribute)
        monkeypatch.setattr(owner, name, getattr(owner, name))
    from django_cadence.engine import planner

    path = tmp_path / "phases.json"
    phases.install(str(path))
    assert planner.overlap_states([]) == {}  # no schedules: answered without the database
    # Modules imported for the first time may register their own (multiprocessing does).
    (write,) = [function for function in registered if function.__module__ == phases.__name__]
    write()
    rows = {row["phase"]: row for row in json.loads(path.read_text())}
    assert rows["    overlap counts"]["calls"] == 1


def test_phase_totals_are_summed_over_workers_and_divided_per_try(tmp_path):
    rows = [
        {"phase": "  claim", "calls": 2, "cpu_s": 0.002, "wall_s": 0.004},
        {
            "phase": "try threads: run_try (the job included)",
            "calls": 10,
            "cpu_s": 0.01,
            "wall_s": 0.02,
        },
    ]
    for name in ("w1", "w2"):
        (tmp_path / f"{name}.json").write_text(json.dumps(rows))
    summary = summarize_phases([tmp_path / "w1.json", tmp_path / "w2.json", tmp_path / "gone.json"])
    assert summary["tries"] == 20
    claim = summary["rows"][0]
    assert (claim["phase"], claim["calls"]) == ("  claim", 4)
    assert claim["cpu_us_per_try"] == 200.0
    assert claim["wall_us_per_try"] == 400.0
