"""Hostile input writes nothing: a clear ``ValidationError``, or a valid schedule that answers.

Hypothesis generates cron strings, time zones, intervals, payloads, bounds and executor
paths and sends them through the three doors a schedule comes in by: the model
(``full_clean()``, ``objects.create()``), the admin's ``ScheduleForm``, and the public API
(``trigger``, ``pause``, ``resume``, ``retry``, ``cancel``, ``retry_now``) with bad ids.
Every answer must be one of:

* a ``ValidationError`` with a message per field (``objects.create()`` may instead let the
  database refuse a value that ``full_clean()`` also refuses: Django's documented behaviour
  for saves without ``full_clean``), and no row written;
* for the API: ``ObjectDoesNotExist``, a ``CadenceError`` (``InvalidTransition``), the
  ``ValueError`` / ``TypeError`` Django raises for an id of the wrong type, or the
  ``DatabaseError`` of a database that refuses the value in the lookup; nothing changed;
* a saved schedule whose ``upcoming(5)`` answers in under a second with at most five
  ascending aware UTC instants after the given one.

Never another exception, a hang, or a half-written row.
"""

from __future__ import annotations

import itertools
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import DatabaseError, transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from django_cadence import services
from django_cadence.admin.forms import ScheduleForm
from django_cadence.exceptions import CadenceError
from django_cadence.models import Attempt, Schedule

pytestmark = pytest.mark.django_db

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
AFTER = datetime(2026, 3, 8, 6, 59, tzinfo=UTC)  # minutes before a DST change in New York
_names = itertools.count()

# --- strategies ------------------------------------------------------------------------------

CRON_ATOMS = st.sampled_from(
    [
        "*", "*/0", "*/1", "*/15", "0", "5", "59", "60", "61", "-1", "0-59", "59-0", "1-1",
        "1,2,3", ",", "1,,2", "L", "W", "15W", "5#3", "?", "H", "jan", "FEB-DEC", "mon-fri",
        "sun", "7", "8", "29", "30", "31", "32", "2", "1/0", "99999999999999999999", "x",
        "\u0661", "\x00", "*/" + "9" * 30, "1-31/7",
    ]
)  # fmt: skip
VALID_CRONS = st.sampled_from(
    ["*/5 * * * *", "30 2 * * *", "0 0 29 2 1", "59 23 31 12 *", "@daily", "0 9-17 * * 1-5"]
)
CRONS = st.one_of(
    VALID_CRONS,
    st.lists(CRON_ATOMS, min_size=1, max_size=7).map(" ".join),
    st.sampled_from(
        [
            "@yearly",
            "@reboot",
            "@every 5m",
            "@daily @hourly",
            "0 0 30 2 *",
            "0 0 31 4 *",
            "0 0 29 2 1",
            "59 23 31 12 *",
            "* * * * * *",
            "* * * *",
            "",
            " ",
            "\t* * * * *",
            "*\n* * * *",
            "0 0 * * 0-7",
            "* * L * *",
            "0 0 1-31/300 * *",
            "0" * 2000,
            " ".join(["1,2,3,4,5,6,7,8,9,10"] * 5),
        ]
    ),
    st.text(max_size=40),
)
ZONES = st.one_of(
    st.sampled_from(
        [
            "UTC",
            "Europe/Dublin",
            "Australia/Lord_Howe",
            "America/Santiago",
            "Etc/GMT+14",
            "",
            " ",
            "utc",
            "Mars/Olympus_Mons",
            "../../../../etc/passwd",
            "/etc/localtime",
            "Europe",
            "right/UTC",
            "posixrules",
            "Factory",
            "UTC\x00",
            "Europe/../UTC",
            "A" * 300,
            "\u00e9t\u00e9",
        ]
    ),
    st.text(max_size=30),
)
INTERVALS = st.one_of(
    st.none(),
    st.timedeltas(min_value=timedelta(days=-3), max_value=timedelta(days=3)),
    st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(seconds=2)),
    st.sampled_from([timedelta(0), timedelta(days=10**5), timedelta.max, timedelta.min]),
)
AWARE_INSTANTS = st.one_of(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.just(UTC),
    ),
    st.sampled_from([AFTER, AFTER + timedelta(hours=1), AFTER - timedelta(days=365)]),
)
INSTANTS = st.one_of(st.none(), AWARE_INSTANTS)
JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(["\x00", "\ud800", "x" * 70_000, 10**400]),
)
PAYLOADS = st.one_of(
    st.dictionaries(st.text(max_size=10), JSON_LEAVES, max_size=4),
    st.recursive(
        JSON_LEAVES,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=10,
    ),
    st.sampled_from(
        [
            {1: "int key"},
            {"context": 1},
            {"a": {1, 2}},
            {"a": b"bytes"},
            {"a": AFTER},
            {"a": (1, 2)},
            {"deep": json.loads("[" * 40 + "]" * 40)},
            [],
            "a string",
            None,
        ]
    ),
)
EXECUTORS = st.one_of(
    st.sampled_from(
        [
            "tests.jobs.noop",
            "tests.jobs.echo",
            "tests.jobs.add",
            "tests.jobs.with_context",
            "tests.jobs.async_add",
            "tests.jobs.CALLS",
            "tests.jobs.os",
            "tests.jobs.missing",
            "tests.jobs.",
            "os.system",
            "subprocess.run",
            "builtins.eval",
            "os",
            "",
            "tests.jobs.no op",
            "tests.jobs.n\u00f6op",
            "tests.missing.noop",
            "a." * 200 + "b",
        ]
    ),
    st.text(max_size=30),
)
NUMBERS = st.one_of(st.none(), st.integers(min_value=-5, max_value=5), st.just(2**40))
DURATIONS = st.one_of(
    st.none(),
    st.timedeltas(min_value=timedelta(seconds=-10), max_value=timedelta(hours=2)),
)


VALID_INTERVALS = st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=3650))


@st.composite
def schedule_fields(draw) -> dict:
    kind = draw(st.sampled_from(["cron", "interval", "once", "weekly", ""]))
    fields = {
        "name": f"hostile-{next(_names)}",
        "kind": kind,
        "cron": draw(CRONS) if kind in ("cron", "") or draw(st.booleans()) else "",
        "interval": draw(INTERVALS) if kind != "cron" else None,
        "run_at": draw(INSTANTS) if kind in ("once", "") else None,
        "timezone": draw(ZONES),
        "executor": draw(EXECUTORS),
        "payload": draw(PAYLOADS),
        "start_at": draw(INSTANTS),
        "end_at": draw(INSTANTS),
        "max_occurrences": draw(NUMBERS),
        "max_attempts": draw(NUMBERS),
        "pause_after_failures": draw(NUMBERS),
        "misfire_grace": draw(DURATIONS),
        "retry_base": draw(DURATIONS),
        "retry_cap": draw(DURATIONS),
        "max_runtime": draw(DURATIONS),
        "jitter": draw(
            st.one_of(
                st.just(timedelta(0)),
                st.timedeltas(min_value=timedelta(seconds=-10), max_value=timedelta(hours=2)),
            )
        ),
        "overlap": draw(st.sampled_from(["allow", "queue", "replace", "sometimes"])),
        "misfire": draw(st.sampled_from(["skip", "fire_once", "fire_all", "never"])),
    }
    # Half the time, a schedule that may well be valid: the "answers in bounded time" branch
    # needs examples too.
    if draw(st.booleans()):
        kind = draw(st.sampled_from(["cron", "interval", "once"]))
        fields.update(
            kind=kind,
            cron=draw(VALID_CRONS) if kind == "cron" else "",
            interval=draw(VALID_INTERVALS) if kind == "interval" else None,
            run_at=draw(AWARE_INSTANTS) if kind == "once" else None,
            executor="tests.jobs.noop",
            payload={},
            timezone=draw(st.sampled_from(["UTC", "America/New_York", "Australia/Lord_Howe"])),
            overlap="allow",
            misfire="fire_once",
            max_attempts=None,
            pause_after_failures=None,
            max_occurrences=draw(st.one_of(st.none(), st.integers(1, 5))),
            **dict.fromkeys(("misfire_grace", "retry_base", "retry_cap", "max_runtime"), None),
        )
        if fields["start_at"] and fields["end_at"] and fields["end_at"] <= fields["start_at"]:
            fields["end_at"] = None
    return fields


# --- the oracle ------------------------------------------------------------------------------


def assert_answers_in_bounded_time(schedule: Schedule) -> None:
    for after in (AFTER, None):
        started = time.monotonic()
        instants = schedule.upcoming(5, after)
        elapsed = time.monotonic() - started
        assert elapsed < 1.0, (schedule.kind, schedule.cron, schedule.timezone, elapsed)
        assert len(instants) <= 5
        assert all(at.utcoffset() == timedelta(0) for at in instants)
        assert instants == sorted(set(instants))
        if after is not None:
            assert all(at > after for at in instants)


def assert_clear(error: ValidationError) -> None:
    assert error.message_dict, error
    for messages in error.message_dict.values():
        assert messages
        assert all(isinstance(m, str) and m.strip() for m in messages)


def refused_or_valid(fields: dict) -> None:
    before = Schedule.objects.count()
    try:
        Schedule(**fields).full_clean()
        valid = True
    except ValidationError as exc:
        assert_clear(exc)
        valid = False

    refusal: Exception | None = None
    try:
        with transaction.atomic():
            created = Schedule.objects.create(**fields)
    except ValidationError as exc:
        assert_clear(exc)
        refusal = exc
    except DatabaseError as exc:  # a value full_clean() refuses that save() let through
        refusal = exc
    if refusal is not None:
        assert not valid, f"full_clean() accepted what create() refused: {refusal!r}"
        assert Schedule.objects.count() == before
        event(f"refused by {type(refusal).__name__}")
        return
    event("saved")
    assert Schedule.objects.count() == before + 1
    created.refresh_from_db()
    assert_answers_in_bounded_time(created)


# --- the model -------------------------------------------------------------------------------


@SETTINGS
@given(fields=schedule_fields())
def test_model_refuses_hostile_schedules_or_saves_one_that_answers(fields):
    refused_or_valid(fields)


@SETTINGS
@given(cron=CRONS, zone=st.one_of(st.sampled_from(["UTC", "America/Santiago"]), ZONES))
def test_any_cron_and_zone_is_refused_or_answers_in_bounded_time(cron, zone):
    refused_or_valid(
        {
            "name": f"cron-{next(_names)}",
            "kind": "cron",
            "cron": cron,
            "timezone": zone,
            "executor": "tests.jobs.noop",
        }
    )


# --- the admin form --------------------------------------------------------------------------

FORM_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            " ",
            "-1",
            "0",
            "1",
            "1e400",
            "nan",
            "inf",
            "99999999999999999999",
            "00:00:00.5",
            "-00:00:01",
            "999999999 00:00:00",
            "1000000000 00:00:00",
            "2026-02-30 00:00",
            "0001-01-01 00:00",
            "9999-12-31 23:59:59",
            "<script>",
            "null",
            "[]",
            "{}",
            '{"a": NaN}',
            '{"a": Infinity}',
            '{"\\u0000": 1}',
            '{"a": "\\ud800"}',
            "[" * 100_000,
            '{"a":' * 5000 + "1" + "}" * 5000,
            '{"password": "********"}',
            '"a string"',
            "1" * 5000,
        ]
    ),
)


EMPTY_IN_A_VALID_FORM = (
    "start_at",
    "end_at",
    "max_occurrences",
    "misfire_grace",
    "pause_after_failures",
    "max_attempts",
    "retry_base",
    "retry_cap",
    "max_runtime",
)


@st.composite
def form_data(draw) -> dict:
    data = {
        name: draw(FORM_TEXT)
        for name in (
            "cron",
            "interval",
            "run_at",
            "timezone",
            "start_at",
            "end_at",
            "max_occurrences",
            "misfire_grace",
            "jitter",
            "pause_after_failures",
            "max_attempts",
            "retry_base",
            "retry_cap",
            "max_runtime",
            "payload",
        )
    }
    data.update(
        name=f"form-{next(_names)}",
        kind=draw(st.sampled_from(["cron", "interval", "once", "x", ""])),
        executor=draw(EXECUTORS),
        overlap=draw(st.sampled_from(["allow", "queue", "x"])),
        misfire=draw(st.sampled_from(["fire_once", "x"])),
    )
    if draw(st.booleans()):
        data["enabled"] = "on"
    if draw(st.booleans()):  # half the time, a form that may well be valid
        kind = draw(st.sampled_from(["cron", "interval"]))
        data.update(
            kind=kind,
            cron=draw(VALID_CRONS) if kind == "cron" else "",
            interval=draw(st.sampled_from(["60", "00:05:00", "1 00:00:00", "0:00:01"]))
            if kind == "interval"
            else "",
            run_at="",
            # The form offers registered jobs (and exact CADENCE_EXECUTORS entries) only.
            executor=draw(
                st.sampled_from(["tests.jobs.atomic_noop", "tests.jobs.at_most_once_noop"])
            ),
            payload=draw(st.sampled_from(["{}", '{"password": "********"}'])),
            timezone=draw(st.sampled_from(["UTC", "Europe/Dublin"])),
            overlap="allow",
            misfire="fire_once",
            jitter="0",
            **dict.fromkeys(EMPTY_IN_A_VALID_FORM, ""),
        )
    return data


@SETTINGS
@given(data=form_data())
def test_admin_form_refuses_hostile_input_with_messages_or_saves_a_valid_schedule(data):
    before = Schedule.objects.count()
    form = ScheduleForm(data=data)
    if not form.is_valid():
        assert form.errors
        assert all(messages for messages in form.errors.values())
        assert Schedule.objects.count() == before
        event("refused")
        return
    event("saved")
    with transaction.atomic():
        schedule = form.save()
    assert Schedule.objects.count() == before + 1
    schedule.refresh_from_db()
    assert_answers_in_bounded_time(schedule)


# --- the public API with bad ids -------------------------------------------------------------

BAD_IDS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=20),
    st.sampled_from([None, 3.5, float("nan"), b"1", "1; DROP TABLE x", "0x1", "", [1], {}]),
)
# DatabaseError: the database refusing a value in the lookup itself (PostgreSQL cannot even
# compare a text column with a string holding a NUL character).
API_ERRORS = (
    ObjectDoesNotExist,
    CadenceError,
    ValidationError,
    ValueError,
    TypeError,
    DatabaseError,
)
# ``retry_now(ids)`` hands its ids to a ``pk__in`` lookup, which Django does not range-check:
# an id past 64 bits is refused by the database driver (OverflowError on SQLite).
RETRY_NOW_ERRORS = (*API_ERRORS, OverflowError)


@pytest.fixture
def existing(make_schedule):
    """A paused schedule and a succeeded attempt: the API must not touch them."""
    schedule = make_schedule(name="existing", enabled=False)
    attempt = Attempt.objects.create(
        schedule=schedule, occurrence_at=AFTER, status="succeeded", finished_at=AFTER
    )
    return schedule, attempt


def snapshot():
    return (
        list(Schedule.objects.order_by("pk").values_list("pk", "enabled", "pause_reason")),
        list(Attempt.objects.order_by("pk").values_list("pk", "status", "retry_at", "tries")),
    )


@SETTINGS
@given(
    bad=BAD_IDS,
    operation=st.sampled_from(["trigger", "pause", "resume", "retry", "cancel", "retry_now"]),
)
def test_public_api_with_bad_ids_raises_a_documented_exception_and_changes_nothing(
    existing, bad, operation
):
    schedule, attempt = existing
    if bad in (schedule.pk, attempt.pk, schedule.name):
        return
    before = snapshot()
    call = getattr(services, operation)
    arguments = ([bad],) if operation == "retry_now" else (bad,)
    expected = RETRY_NOW_ERRORS if operation == "retry_now" else API_ERRORS
    try:
        with transaction.atomic():
            result = call(*arguments)
    except expected as exc:
        event(type(exc).__name__)
    else:
        assert operation == "retry_now", (operation, bad, result)
        assert result == []
    assert snapshot() == before
