"""The allow-list, the @job registry, resolution and the call convention; no database."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import textwrap
import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st

from django_cadence.exceptions import ExecutorNotAllowed, ExecutorNotFound, InvalidPayload
from django_cadence.executors import allow_list, calling, paths
from django_cadence.executors import registry as executors
from django_cadence.executors.calling import AttemptContext
from django_cadence.executors.registry import JobOptions, job
from tests import jobs

HERE = __name__  # "tests.executors.test_registry": outside the "tests.jobs.*" pattern


@job
def registered_only(**kwargs):
    return "registered"


@job(
    max_attempts=5,
    retry_base=2,
    retry_cap=timedelta(minutes=1),
    max_runtime=30.5,
    delivery="at_most_once",
    isolation="process",
)
def registered_with_options():
    return "options"


@job()
async def registered_async(context):
    return context.try_number


def positional_only(a, /):
    return a


class CallableObject:
    def __call__(self, x, context=None):
        return (x, context is not None)


callable_object = CallableObject()


def make_context(**overrides) -> AttemptContext:
    values = {
        "attempt_id": 7,
        "schedule_name": "nightly",
        "occurrence_at": datetime(2026, 3, 8, 7, 0, tzinfo=UTC),
        "try_number": 1,
        "idempotency_key": "cadence:1:schedule:2026-03-08T07:00:00.000000Z",
    }
    return AttemptContext(**{**values, **overrides})


@pytest.fixture(autouse=True)
def _fresh_cache():
    allow_list.clear_cache()
    yield
    allow_list.clear_cache()


@pytest.fixture
def side_effect_module(tmp_path, monkeypatch):
    """A module ``cadence_probe`` whose import writes a marker file, plus a helper module
    ``cadence_probe_jobs`` that re-exports a function from elsewhere; removed afterwards."""
    marker = tmp_path / "imported"
    (tmp_path / "cadence_probe.py").write_text(
        textwrap.dedent(f"""
            import pathlib
            pathlib.Path({str(marker)!r}).write_text("imported")

            def run(**kwargs):
                return "ran"
        """)
    )
    (tmp_path / "cadence_probe_jobs.py").write_text(
        textwrap.dedent("""
            from os.path import join

            from django_cadence.executors.registry import job

            def local():
                return "local"

            @job(delivery="at_most_once")
            def careful():
                return "careful"
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # Registrations made by importing the probe modules must not outlive the test.
    monkeypatch.setattr(executors, "_registry", dict(executors._registry))
    monkeypatch.setattr(executors, "_functions", dict(executors._functions))
    importlib.invalidate_caches()
    yield marker
    for name in ("cadence_probe", "cadence_probe_jobs"):
        sys.modules.pop(name, None)


# The allow-list.


@pytest.mark.parametrize(
    ("patterns", "path", "allowed"),
    [
        (["myapp.jobs.*"], "myapp.jobs.send", True),
        (["myapp.jobs.*"], "myapp.jobs.sub.send", True),
        (["myapp.jobs.*"], "myapp.jobs", False),
        (["myapp.jobs.*"], "myapp.jobsx.send", False),
        (["myapp.jobs.*"], "myapp.job.send", False),
        (["myapp.jobs.*"], "other.jobs.send", False),
        (["myapp.*"], "myapp.send", True),
        (["myapp.jobs.send"], "myapp.jobs.send", True),
        (["myapp.jobs.send"], "myapp.jobs.send_all", False),
        (["myapp.jobs.send"], "myapp.jobs.send.inner", False),
        (["myapp.jobs"], "myapp.jobs.send", False),
        (["*"], "myapp.jobs.send", False),
        ([".*"], "myapp.jobs.send", False),
        (["myapp.*.send"], "myapp.jobs.send", False),
        (["myapp.jobs*"], "myapp.jobsx.send", False),
        ([], "myapp.jobs.send", False),
        (["other.*", "myapp.jobs.send"], "myapp.jobs.send", True),
    ],
    ids=[
        "prefix-child",
        "prefix-grandchild",
        "prefix-itself",
        "prefix-sibling-name",
        "prefix-shorter-name",
        "prefix-other-package",
        "one-part-prefix",
        "exact",
        "exact-longer-name",
        "exact-child",
        "module-without-star",
        "bare-star",
        "dot-star",
        "inner-star",
        "star-without-dot",
        "no-patterns",
        "second-pattern",
    ],
)
def test_is_allowed_pattern_matching(patterns, path, allowed):
    with override_settings(CADENCE_EXECUTORS=patterns):
        assert allow_list.is_allowed(path) is allowed


@pytest.mark.parametrize(
    "path",
    [
        "os.system",
        "subprocess.run",
        "builtins.eval",
        "os.path.join",
        "cadence_probe.run",
        "tests.jobs.__builtins__",
        "tests.jobs.__class__",
        "tests.jobs..noop",
        ".tests.jobs.noop",
        "tests.jobs.noop.",
        "tests.jobs.no op",
        " tests.jobs.noop",
        "tests.jobs.noop\n",
        "tests.jobs.nöop",
        "tests.jobs.noop()",
        "tests/jobs.noop",
        "tests.jobs.*",
        "tests.jobs.class",
        "tests.jobs." + "x" * 250,
        "noop",
        "",
        None,
        42,
    ],
    ids=[
        "os-system",
        "subprocess-run",
        "builtins-eval",
        "os-path-join",
        "side-effect-module",
        "dunder-builtins",
        "dunder-class",
        "double-dot",
        "leading-dot",
        "trailing-dot",
        "space",
        "leading-space",
        "trailing-newline",
        "unicode",
        "call-syntax",
        "slash",
        "star",
        "keyword",
        "too-long",
        "one-part",
        "empty",
        "none",
        "int",
    ],
)
def test_check_allowed_rejects_without_importing(path, side_effect_module):
    with override_settings(CADENCE_EXECUTORS=["tests.jobs.*"]):
        before = set(sys.modules)  # after override_settings' own lazy imports
        assert allow_list.is_allowed(path) is False
        with pytest.raises(ExecutorNotAllowed, match="is not allowed"):
            allow_list.check_allowed(path)
        with pytest.raises(ExecutorNotAllowed):
            allow_list.resolve(path)
        with pytest.raises(ExecutorNotAllowed):
            allow_list.job_options(path)
        assert set(sys.modules) - before == set()
    assert not side_effect_module.exists()


def test_check_allowed_message_names_path_and_setting():
    with override_settings(CADENCE_EXECUTORS=[]), pytest.raises(ExecutorNotAllowed) as info:
        allow_list.check_allowed("os.system")
    assert "'os.system'" in str(info.value)
    assert "CADENCE_EXECUTORS" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_resolve_imports_only_once_allowed(side_effect_module):
    with override_settings(CADENCE_EXECUTORS=["cadence_probe.*"]):
        assert allow_list.resolve("cadence_probe.run")() == "ran"
    assert side_effect_module.exists()


@given(st.text(max_size=60))
def test_is_allowed_never_raises_and_only_allows_dotted_paths(path):
    with override_settings(CADENCE_EXECUTORS=["tests.jobs.*"]):
        if allow_list.is_allowed(path):
            assert path.startswith("tests.jobs.") or path in executors.registered_jobs()
            assert path.isascii()
            assert path.replace(".", "_").isidentifier()


@pytest.mark.parametrize(
    ("patterns", "invalid"),
    [
        (["myapp.jobs.*", "myapp.tasks.send"], []),
        (["myapp.*"], []),
        (
            ["*", "myapp", "myapp.*.send", "myapp.jobs*", "my app.*"],
            ["*", "myapp", "myapp.*.send", "myapp.jobs*", "my app.*"],
        ),
    ],
    ids=["valid", "one-part-prefix", "never-match"],
)
def test_invalid_patterns_lists_patterns_that_never_match(patterns, invalid):
    with override_settings(CADENCE_EXECUTORS=patterns):
        assert paths.invalid_patterns() == invalid


# The @job registry.


def test_job_registration_alone_allows_path():
    path = f"{HERE}.registered_only"
    with override_settings(CADENCE_EXECUTORS=[]):
        assert allow_list.is_allowed(path)
        assert allow_list.resolve(path) is registered_only
        assert allow_list.job_options(path) == JobOptions(path=path)
    assert registered_only() == "registered"
    assert registered_only.cadence_job == JobOptions(path=path)


def test_job_options_are_normalised_and_attached():
    path = f"{HERE}.registered_with_options"
    expected = JobOptions(
        path=path,
        max_attempts=5,
        retry_base=timedelta(seconds=2),
        retry_cap=timedelta(minutes=1),
        max_runtime=timedelta(seconds=30.5),
        delivery="at_most_once",
        isolation="process",
    )
    assert registered_with_options.cadence_job == expected
    assert executors.registered_jobs()[path] == expected
    assert allow_list.job_options(path) == expected


def test_job_options_defaults_for_pattern_allowed_path():
    assert allow_list.job_options("tests.jobs.noop") == JobOptions(path="tests.jobs.noop")


def test_registered_jobs_returns_copy():
    executors.registered_jobs().clear()
    assert f"{HERE}.registered_only" in executors.registered_jobs()


def test_job_keeps_function_unchanged():
    assert registered_async.__name__ == "registered_async"
    assert asyncio.iscoroutinefunction(registered_async)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"delivery": "exactly_once"}, r"delivery.*at_least_once, at_most_once, atomic"),
        ({"isolation": "fork"}, r"isolation.*thread, process"),
        ({"max_attempts": 0}, r"max_attempts.*1"),
        ({"max_attempts": True}, r"max_attempts"),
        ({"max_attempts": "3"}, r"max_attempts"),
        ({"retry_base": 0}, r"retry_base.*more than zero"),
        ({"retry_cap": -1}, r"retry_cap.*more than zero"),
        ({"max_runtime": timedelta(0)}, r"max_runtime.*more than zero"),
        ({"max_runtime": "10"}, r"max_runtime.*timedelta or seconds"),
        ({"retry_base": 10, "retry_cap": 5}, r"retry_cap.*retry_base"),
        ({"delivery": "atomic", "isolation": "process"}, r"atomic.*child process"),
    ],
    ids=[
        "delivery",
        "isolation",
        "max-attempts-zero",
        "max-attempts-bool",
        "max-attempts-str",
        "retry-base-zero",
        "retry-cap-negative",
        "max-runtime-zero",
        "max-runtime-str",
        "cap-below-base",
        "atomic-in-process",
    ],
)
def test_job_rejects_bad_options(options, match):
    before = executors.registered_jobs()
    with pytest.raises(ValueError, match=match):
        job(**options)
    assert executors.registered_jobs() == before


def test_job_rejects_nested_function():
    def nested():
        pass

    with pytest.raises(TypeError, match=r"module-level function.*<locals>"):
        job(nested)
    assert not any("<locals>" in path for path in executors.registered_jobs())


@pytest.mark.parametrize(
    ("target", "match"),
    [
        (CallableObject.__call__, r"module-level function.*CallableObject.__call__"),
        (CallableObject, r"decorates functions"),
        (callable_object, r"no dotted path"),
        ("tests.jobs.noop", r"decorates functions"),
    ],
    ids=["method", "class", "callable-instance", "string"],
)
def test_job_rejects_non_functions(target, match):
    with pytest.raises(TypeError, match=match):
        job(target)


def test_job_rejects_atomic_async():
    async def atomic_async():
        pass

    atomic_async.__qualname__ = "atomic_async"  # pretend it is module-level
    with pytest.raises(ValueError, match=r"atomic.*async def"):
        job(delivery="atomic")(atomic_async)


def test_autodiscover_imports_jobs_modules(monkeypatch):
    seen = []
    monkeypatch.setattr(executors, "autodiscover_modules", seen.append)
    executors.autodiscover()
    assert seen == ["jobs"]


# Resolution.


def test_resolve_caches_import_but_rechecks_allow_list(monkeypatch):
    imports = []
    real_import = importlib.import_module
    monkeypatch.setattr(
        importlib, "import_module", lambda name: imports.append(name) or real_import(name)
    )
    assert allow_list.resolve("tests.jobs.add") is jobs.add
    assert allow_list.resolve("tests.jobs.add") is jobs.add
    assert imports == ["tests.jobs"]
    with override_settings(CADENCE_EXECUTORS=[]), pytest.raises(ExecutorNotAllowed):
        allow_list.resolve("tests.jobs.add")
    allow_list.clear_cache()
    assert allow_list.resolve("tests.jobs.add") is jobs.add
    assert imports == ["tests.jobs", "tests.jobs"]


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("tests.jobs.missing", r"'tests.jobs' has no 'missing'"),
        ("tests.jobs.sub.send", r"cannot import 'tests.jobs.sub'"),
        ("tests.jobs.CALLS", r"names a list"),
        ("tests.jobs.os", r"names a module"),
        ("tests.jobs.Permanent", r"names a type"),
    ],
    ids=["missing-attribute", "missing-module", "list", "module", "class"],
)
def test_resolve_not_found(path, match):
    with pytest.raises(ExecutorNotFound, match=match) as info:
        allow_list.resolve(path)
    assert isinstance(info.value, LookupError)


def test_resolve_rejects_name_imported_from_outside_prefix(side_effect_module):
    with override_settings(CADENCE_EXECUTORS=["cadence_probe_jobs.*"]):
        assert allow_list.resolve("cadence_probe_jobs.local")() == "local"
        with pytest.raises(ExecutorNotAllowed, match=r"defined in '(posix|nt)path'"):
            allow_list.resolve("cadence_probe_jobs.join")
    with override_settings(CADENCE_EXECUTORS=["cadence_probe_jobs.join"]):
        assert allow_list.resolve("cadence_probe_jobs.join")("a", "b").endswith("b")


def test_job_options_imports_module_to_find_registration(side_effect_module):
    path = "cadence_probe_jobs.careful"
    with override_settings(CADENCE_EXECUTORS=["cadence_probe_jobs.*"]):
        assert "cadence_probe_jobs" not in sys.modules
        assert allow_list.job_options(path) == JobOptions(path=path, delivery="at_most_once")
        assert allow_list.job_options("cadence_probe_jobs.missing") == JobOptions(
            path="cadence_probe_jobs.missing"
        )
    assert path in executors.registered_jobs()


def test_resolve_accepts_callable_object():
    with override_settings(CADENCE_EXECUTORS=[f"{HERE}.*"]):
        assert allow_list.resolve(f"{HERE}.callable_object") is callable_object


# The call convention.


@pytest.mark.parametrize(
    ("func", "payload", "match"),
    [
        (jobs.add, {"a": 1, "b": 2}, None),
        (jobs.add, {"a": 1}, r"needs 'b' in the payload"),
        (jobs.add, {}, r"needs 'a', 'b'"),
        (jobs.add, {"a": 1, "b": 2, "c": 3}, r"does not accept 'c'; it takes 'a', 'b'"),
        (jobs.add, {"a": 1, "b": 2, "context": 3}, r"'context' is reserved"),
        (jobs.with_context, {}, None),
        (jobs.with_context, {"label": "y"}, None),
        (jobs.with_context, {"context": 1}, r"'context' is reserved"),
        (jobs.echo, {"anything": [1, 2]}, None),
        (jobs.noop, {}, None),
        (jobs.raise_error, {"msg": "x"}, r"does not accept 'msg'; it takes 'message'"),
        (jobs.fail_n_times, {"n": 1, "key": "k"}, None),
        (jobs.kill_worker, {"x": 1}, r"does not accept 'x'; it takes no arguments"),
        (positional_only, {"a": 1}, r"positional-only parameter\(s\) 'a'"),
        (callable_object, {"x": 1}, None),
        (jobs.async_add, {"a": 1}, r"needs 'b'"),
        (jobs.add, ["a", "b"], r"must be a JSON object, not list"),
    ],
    ids=[
        "ok",
        "missing-one",
        "missing-two",
        "unexpected",
        "context-key",
        "context-not-from-payload",
        "context-with-default-arg",
        "context-key-for-context-job",
        "var-kwargs",
        "no-args",
        "unexpected-names-accepted",
        "required-context",
        "takes-nothing",
        "positional-only",
        "callable-object",
        "async-missing",
        "not-a-dict",
    ],
)
def test_check_call_binds_payload(func, payload, match):
    if match is None:
        calling.check_call(func, payload)
    else:
        with pytest.raises(InvalidPayload, match=match):
            calling.check_call(func, payload)


class WithoutSignature:
    """A callable whose signature ``inspect`` cannot read, as some written in C have none
    (``print`` has one since Python 3.11, so it cannot stand for them)."""

    __signature__ = "unreadable"  # inspect.signature raises TypeError on it

    def __call__(self, **kwargs):
        return kwargs


def test_check_call_accepts_any_payload_for_a_callable_without_a_signature():
    func = WithoutSignature()
    with pytest.raises((TypeError, ValueError)):  # no signature to read (3.12: ValueError)
        inspect.signature(func)
    # Nothing to bind against: the payload is accepted as it is, and passed without context.
    calling.check_call(func, {"anything": 1, "goes": [2]})
    assert calling.call(func, {"anything": 1}, make_context()) == {"anything": 1}
    # The same payload is checked, and refused, against a callable that has a signature.
    with pytest.raises(InvalidPayload, match="does not accept 'anything'"):
        calling.check_call(jobs.add, {"a": 1, "b": 2, "anything": 1})


@pytest.mark.parametrize(
    ("func", "payload", "expected"),
    [
        (jobs.add, {"a": 1, "b": 2}, 3),
        (jobs.echo, {"x": 1}, {"x": 1}),
        (jobs.noop, {}, None),
        (jobs.with_context, {"label": "y"}, {"label": "y", "try": 2, "key": "k"}),
        (jobs.async_add, {"a": 2, "b": 3}, 5),
        (jobs.async_with_context, {}, {"try": 2, "key": "k"}),
        (registered_async, {}, 2),
        (callable_object, {"x": 1}, (1, True)),
        (lambda a: jobs.async_add(a, 1), {"a": 1}, 2),
    ],
    ids=[
        "sync",
        "var-kwargs-get-no-context",
        "none",
        "context",
        "async",
        "async-context",
        "registered-async",
        "callable-object",
        "returns-awaitable",
    ],
)
def test_call_passes_payload_and_context(func, payload, expected):
    assert calling.call(func, payload, make_context(try_number=2, idempotency_key="k")) == expected


def test_call_runs_async_in_worker_thread():
    results = []
    thread = threading.Thread(
        target=lambda: results.append(
            calling.call(jobs.async_add, {"a": 1, "b": 1}, make_context())
        )
    )
    thread.start()
    thread.join()
    assert results == [2]


def test_call_refuses_async_inside_running_loop():
    async def main():
        return calling.call(jobs.async_add, {"a": 1, "b": 1}, make_context())

    with pytest.raises(RuntimeError, match="already running"):
        asyncio.run(main())


def test_call_rejects_context_key():
    with pytest.raises(InvalidPayload, match="reserved"):
        calling.call(jobs.echo, {"context": 1}, make_context())


def test_call_propagates_job_errors():
    with pytest.raises(RuntimeError, match="boom"):
        calling.call(jobs.raise_error, {}, make_context())


def test_call_fail_n_times_succeeds_after_n_tries():
    for try_number in (1, 2):
        with pytest.raises(RuntimeError, match=f"failing try {try_number} of 2"):
            calling.call(
                jobs.fail_n_times, {"n": 2, "key": "k"}, make_context(try_number=try_number)
            )
    assert calling.call(jobs.fail_n_times, {"n": 2, "key": "k"}, make_context(try_number=3)) == "ok"


def test_call_record_call_appends(monkeypatch):
    monkeypatch.setattr(jobs, "CALLS", [])
    assert calling.call(jobs.record_call, {"label": "a"}, make_context()) == "a"
    assert jobs.CALLS == ["a"]


def test_attempt_context_cancelled_follows_event():
    context = make_context()
    assert context.cancelled is False
    context.cancel_event.set()
    assert context.cancelled is True
    assert calling.call(jobs.sleep_for, {"seconds": 30}, context) == "cancelled"
    assert make_context().cancelled is False  # each context has its own event


def test_attempt_context_is_frozen():
    with pytest.raises(AttributeError):
        make_context().try_number = 2  # type: ignore[misc]


def test_sleep_for_completes_without_context():
    assert calling.call(jobs.sleep_for, {"seconds": 0.01}, make_context()) == "done"


# Idempotency keys.

OCCURRENCE = datetime(2026, 3, 8, 7, 0, tzinfo=UTC)


def test_idempotency_key_format():
    key = calling.idempotency_key(42, OCCURRENCE, "schedule")
    assert key == "cadence:42:schedule:2026-03-08T07:00:00.000000Z"


def test_idempotency_key_is_stable_across_zones():
    new_york = OCCURRENCE.astimezone(timezone(timedelta(hours=-4)))
    assert calling.idempotency_key(42, new_york, "schedule") == calling.idempotency_key(
        42, OCCURRENCE, "schedule"
    )


@pytest.mark.parametrize(
    ("schedule_id", "occurrence_at", "trigger"),
    [
        (43, OCCURRENCE, "schedule"),
        (42, OCCURRENCE + timedelta(microseconds=1), "schedule"),
        (42, OCCURRENCE, "manual"),
    ],
    ids=["other-schedule", "other-occurrence", "other-trigger"],
)
def test_idempotency_key_differs_per_occurrence(schedule_id, occurrence_at, trigger):
    base = calling.idempotency_key(42, OCCURRENCE, "schedule")
    assert calling.idempotency_key(schedule_id, occurrence_at, trigger) != base


def test_idempotency_key_rejects_naive_datetime():
    with pytest.raises(ValueError, match="aware"):
        calling.idempotency_key(42, datetime(2026, 3, 8, 7, 0), "schedule")
