"""The schedules admin: the changelist's columns and filters, the form's executor and payload."""

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_cadence.admin.forms import executor_choices, restore_secrets
from django_cadence.models import Attempt, Schedule
from django_cadence.schedule.describe import describe_cron, describe_interval, describe_schedule
from tests.admin.conftest import clock_reads
from tests.support.attempts import failed_on_time

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHANGELIST = reverse("admin:django_cadence_schedule_changelist")
ADD = reverse("admin:django_cadence_schedule_add")


def change_url(schedule):
    return reverse("admin:django_cadence_schedule_change", args=[schedule.pk])


def attempts(schedule, statuses, start=T0):
    """One finished attempt per status, an hour apart, oldest first."""
    Attempt.objects.bulk_create(
        Attempt(
            schedule=schedule,
            occurrence_at=start + timedelta(hours=i),
            status=status,
            retry_at=start if status == "pending" else None,
        )
        for i, status in enumerate(statuses)
    )


def form_data(**overrides):
    """A valid POST of the add form (a registered executor, since the field is a choice)."""
    data = {
        "name": "nightly",
        "enabled": "on",
        "queue": "default",
        "executor": "tests.jobs.atomic_noop",
        "payload": "{}",
        "kind": "cron",
        "cron": "30 2 * * *",
        "interval": "",
        "run_at_0": "",
        "run_at_1": "",
        "timezone": "America/New_York",
        "overlap": "skip_if_running",
        "misfire": "fire_once",
        "jitter": "0",
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    ("fields", "description"),
    [
        ({"kind": "cron", "cron": "*/5 * * * *", "interval": None}, "Every 5 minutes"),
        ({"kind": "cron", "cron": "@daily", "interval": None}, "At 00:00"),
        ({"kind": "cron", "cron": "@hourly", "interval": None}, "Every hour"),
        ({"kind": "cron", "cron": "0 9 * * mon-fri", "interval": None}, "At 09:00, Monday"),
        ({"kind": "interval", "interval": timedelta(minutes=5)}, "every 5 minutes"),
        ({"kind": "interval", "interval": timedelta(hours=1)}, "every hour"),
        ({"kind": "interval", "interval": timedelta(minutes=90)}, "every 1 hour 30 minutes"),
        (
            {
                "kind": "once",
                "interval": None,
                "run_at": datetime(2027, 3, 14, 7, tzinfo=UTC),
                "timezone": "America/New_York",
            },
            "once at 2027-03-14 03:00 EDT",
        ),
    ],
    ids=["cron-step", "macro-daily", "macro-hourly", "weekdays", "5-min", "hour", "90-min", "once"],
)
def test_admin_schedule_rule_is_described_in_words(
    admin_client, make_schedule, fields, description
):
    schedule = make_schedule(**fields)
    assert describe_schedule(schedule).startswith(description)
    assert description in admin_client.get(CHANGELIST).content.decode()


def test_admin_describe_handles_odd_input():
    assert describe_interval(timedelta(seconds=1.5)) == "every 1.5 seconds"
    assert describe_interval(timedelta(days=1, seconds=5)) == "every 1 day 5 seconds"
    assert describe_cron("@WEEKLY") == "At 00:00, only on Sunday"
    assert describe_cron("not a cron") == "not a cron"


def test_admin_schedule_changelist_shows_next_run_in_zone_and_utc(admin_client, make_schedule):
    schedule = make_schedule(kind="cron", cron="0 12 * * *", interval=None, timezone="Asia/Tokyo")
    html = admin_client.get(CHANGELIST).content.decode()
    local = schedule.next_run_at.astimezone(ZoneInfo("Asia/Tokyo"))
    assert local.hour == 12
    assert "Asia/Tokyo" in html
    # To the second in the schedule's zone, UTC at hand in the tooltip.
    utc = schedule.next_run_at.strftime("%Y-%m-%d 03:00:00 UTC")
    local = local.strftime("%Y-%m-%d 12:00:00 JST")
    assert f'<span class="cadence-time" title="{utc}">{local}</span>' in html


def test_admin_schedule_changelist_strip_and_last_outcome(admin_client, make_schedule):
    schedule = make_schedule(name="striped")
    statuses = ["succeeded"] * 20 + ["dead_letter", "skipped", "missed", "cancelled", "pending"]
    attempts(schedule, statuses)
    html = admin_client.get(CHANGELIST).content.decode()
    strip = html[
        html.index('class="cadence-strip"') : html.index("</a>", html.index("cadence-strip"))
    ]
    cells = strip.count("cadence-cell")
    assert cells == 20  # only the last 20 of 25
    for status in ("succeeded", "dead_letter", "skipped", "missed", "cancelled", "pending"):
        assert f"cadence-cell cadence-status-{status}" in strip
    # The last *outcome* is the newest finished attempt, not the pending one.
    assert 'cadence-badge cadence-status-cancelled">cancelled<' in html
    assert f"?schedule__id__exact={schedule.pk}" in strip


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kind__exact=cron", {"cron-job"}),
        ("enabled__exact=0", {"paused-job"}),
        ("overlap__exact=allow", {"allow-job"}),
        ("last_outcome=dead_letter", {"failing-job"}),
        ("last_outcome=succeeded", {"cron-job"}),
        ("last_outcome=none", {"paused-job", "allow-job"}),
        ("q=failing", {"failing-job"}),
        ("q=tests.jobs.echo", {"allow-job"}),
    ],
)
def test_admin_schedule_changelist_filters_and_search(admin_client, make_schedule, query, expected):
    cron = make_schedule(name="cron-job", kind="cron", cron="@daily", interval=None)
    failing = make_schedule(name="failing-job")
    make_schedule(name="paused-job", enabled=False)
    make_schedule(name="allow-job", overlap="allow", executor="tests.jobs.echo")
    attempts(cron, ["dead_letter", "succeeded"])
    attempts(failing, ["succeeded", "dead_letter", "pending"])
    response = admin_client.get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200
    shown = {s.name for s in response.context["cl"].result_list}
    assert shown == expected


@pytest.mark.parametrize(("schedules", "per_schedule"), [(5, 3), (50, 30)])
def test_admin_schedule_changelist_query_count_does_not_grow(
    admin_client, make_schedule, django_assert_num_queries, schedules, per_schedule
):
    for _ in range(schedules):
        attempts(make_schedule(), ["succeeded", "dead_letter"] * (per_schedule // 2) + ["skipped"])
    # Session, user, filtered and full counts, the page (last outcome and strip cutoff
    # annotated), one query for all the strips, and the dead letters of the last 24 h for the
    # navigation sidebar's overview row; then the warning banner's reads of the oldest due
    # schedule and the oldest ready attempts (none: so no more); the queue filter's names;
    # and the engine clock's.
    with django_assert_num_queries(10 + clock_reads()):
        response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    assert response.content.decode().count("cadence-cell ") == schedules * min(20, per_schedule)


def test_admin_schedule_last_outcome_follows_the_unique_key(admin_client, make_schedule):
    """Newest by (occurrence_at, trigger): the unique index's order, so no database sorts.

    Ordered by occurrence alone, MariaDB read and sorted every finished attempt of each
    schedule through (schedule, status, occurrence_at): 280 ms a page with 10^6 attempts.
    """
    schedule = make_schedule()
    attempts(schedule, ["dead_letter", "succeeded", "pending"])
    Attempt.objects.create(
        schedule=schedule,
        occurrence_at=T0 + timedelta(hours=1),
        trigger="manual",
        status="cancelled",
    )
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(CHANGELIST)
    assert [s.last_outcome for s in response.context["cl"].result_list] == ["succeeded"]
    page = next(q["sql"] for q in queries.captured_queries if "last_outcome" in q["sql"])
    assert re.search(r"ORDER BY \S*occurrence_at\S* DESC, \S*trigger\S* DESC", page)


def test_admin_schedule_change_and_add_pages_render(admin_client, make_schedule):
    schedule = make_schedule(kind="cron", cron="*/15 * * * *", interval=None)
    attempts(schedule, ["succeeded", "dead_letter"])
    html = admin_client.get(change_url(schedule)).content.decode()
    assert 'class="cadence-preview"' in html
    assert "cadence-status-dead_letter" in html  # the state fieldset's strip
    assert "django_cadence/schedule_preview.js" in html
    assert admin_client.get(ADD).status_code == 200


def test_admin_schedule_executor_is_a_choice_of_allowed_paths(admin_client, make_schedule):
    schedule = make_schedule(executor="tests.jobs.echo")
    form = admin_client.get(change_url(schedule)).context["adminform"].form
    values = {
        value for _group, options in form.fields["executor"].choices[1:] for value, _ in options
    }
    assert "tests.jobs.atomic_noop" in values  # registered with @job
    assert "tests.jobs.echo" in values  # the current value, allowed by "tests.jobs.*"
    assert "tests.jobs.noop" in values  # defined in the module "tests.jobs.*" names
    assert "os.system" not in values


@override_settings(CADENCE_EXECUTORS=["tests.jobs.add", "tests.discovery.helpers.*"])
def test_admin_schedule_executor_choices_drop_paths_no_longer_allowed(make_schedule):
    with override_settings(CADENCE_EXECUTORS=["tests.jobs.*"]):
        schedule = make_schedule(executor="tests.jobs.echo")
    values = {v for _g, options in executor_choices(schedule.executor)[1:] for v, _ in options}
    assert "tests.jobs.add" in values  # an exact CADENCE_EXECUTORS entry
    assert "tests.jobs.echo" not in values  # its pattern is gone
    assert "tests.discovery.helpers.*" not in values  # a pattern is never a choice itself


def test_admin_schedule_post_with_unlisted_executor_is_rejected(admin_client):
    response = admin_client.post(ADD, form_data(executor="os.system"))
    assert response.status_code == 200
    assert "executor" in response.context["adminform"].form.errors
    assert not Schedule.objects.exists()


def test_admin_schedule_add_with_a_registered_executor(admin_client):
    response = admin_client.post(ADD, form_data())
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Schedule.objects.get().executor == "tests.jobs.atomic_noop"


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"payload": "[1, 2]"}, "payload", "JSON object"),
        ({"payload": "{not json"}, "payload", "valid JSON"),
        (
            {"payload": '{"unexpected": 1}', "executor": "tests.jobs.process_sleep"},
            "payload",
            "does not accept",
        ),
        ({"cron": "0 0 30 2 *"}, "cron", "never"),
        ({"cron": "61 * * * *"}, "cron", "out of range"),
        ({"timezone": "Mars/Olympus"}, "timezone", "Unknown time zone"),
        ({"kind": "interval", "cron": "", "interval": "0:00:00.5"}, "interval", "at least"),
        ({"kind": "once", "cron": ""}, "run_at", "needs a value for run_at"),
    ],
    ids=[
        "payload-list",
        "payload-syntax",
        "payload-signature",
        "cron-never",
        "cron-range",
        "timezone",
        "interval-min",
        "once-without-run-at",
    ],
)
def test_admin_schedule_errors_show_on_their_field(admin_client, overrides, field, message):
    response = admin_client.post(ADD, form_data(**overrides))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert not Schedule.objects.exists()


def test_admin_schedule_secrets_are_redacted_and_kept_on_save(admin_client, make_schedule):
    schedule = make_schedule(
        executor="tests.jobs.echo",
        payload={"user": "ann", "password": "hunter2", "nested": {"api_key": "k-123"}},
        metadata={"team": "billing", "webhook_token": "w-456"},
    )
    html = admin_client.get(change_url(schedule)).content.decode()
    assert "hunter2" not in html
    assert "k-123" not in html
    assert "w-456" not in html
    form = admin_client.get(change_url(schedule)).context["adminform"].form
    data = {
        **form_data(
            name=schedule.name,
            executor="tests.jobs.echo",
            kind="interval",
            cron="",
            interval="00:05:00",
            timezone="UTC",
        )
    }
    data["payload"] = form["payload"].value()  # exactly what the page shows, ******** included
    data["payload"] = data["payload"].replace('"ann"', '"bob"')
    data["metadata"] = form["metadata"].value().replace('"billing"', '"mail"')
    response = admin_client.post(change_url(schedule), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    schedule.refresh_from_db()
    assert schedule.payload == {
        "user": "bob",
        "password": "hunter2",
        "nested": {"api_key": "k-123"},
    }
    assert schedule.metadata == {"team": "mail", "webhook_token": "w-456"}


def test_admin_restore_secrets_replaces_only_untouched_redactions():
    stored = {"password": "old", "items": [{"token": "t1"}], "name": "x"}
    typed = {
        "password": "new",
        "items": [{"token": "********"}, {"token": "t2"}],
        "name": "********",
    }
    assert restore_secrets(typed, stored) == {
        "password": "new",
        "items": [{"token": "t1"}, {"token": "t2"}],
        "name": "********",  # not a secret key: the mark is what the operator typed
    }


@override_settings(TIME_ZONE="Europe/Paris")
def test_admin_form_datetimes_are_wall_times_in_the_schedules_zone(admin_client):
    """Run at, start at and end at are typed (and shown) in the schedule's zone, not TIME_ZONE."""
    data = form_data(
        name="tokyo-once",
        kind="once",
        cron="",
        timezone="Asia/Tokyo",
        run_at_0="2027-07-01",
        run_at_1="08:00:00",
        start_at_0="2027-06-01",
        start_at_1="00:00:00",
    )
    response = admin_client.post(ADD, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    schedule = Schedule.objects.get(name="tokyo-once")
    assert schedule.run_at == datetime(2027, 6, 30, 23, tzinfo=UTC)
    assert schedule.start_at == datetime(2027, 5, 31, 15, tzinfo=UTC)
    html = admin_client.get(change_url(schedule)).content.decode()
    assert 'name="run_at_0" value="2027-07-01"' in html
    assert 'name="run_at_1" value="08:00:00"' in html
    assert "Wall time in the schedule's time zone" in html


def test_admin_add_form_has_one_labelled_fieldset_per_kind(admin_client):
    html = admin_client.get(ADD).content.decode()
    for kind, field in (("cron", "cron"), ("interval", "interval"), ("once", "run_at_0")):
        assert f"cadence-kind-{kind}" in html
        assert f"(kind: {kind})" in html
        assert f'name="{field}"' in html
    assert '<a class="cadence-text-link" href="?kind=interval">interval</a>' in html


@pytest.mark.parametrize(
    ("kind", "shown", "hidden"),
    [
        ("cron", "cron", ("interval", "run_at_0")),
        ("interval", "interval", ("cron", "run_at_0")),
        ("once", "run_at_0", ("cron", "interval")),
    ],
)
def test_admin_add_form_for_one_kind_has_only_its_fields(admin_client, kind, shown, hidden):
    response = admin_client.get(ADD, {"kind": kind})
    html = response.content.decode()
    assert f'name="{shown}"' in html
    for field in hidden:
        assert f'name="{field}"' not in html
    assert response.context["adminform"].form.initial["kind"] == kind


def test_admin_add_form_for_one_kind_saves_without_the_other_kinds_fields(admin_client):
    data = form_data(name="every-five", kind="interval", interval="00:05:00")
    for field in ("cron", "run_at_0", "run_at_1"):
        data.pop(field)
    response = admin_client.post(f"{ADD}?kind=interval", data)
    assert response.status_code == 302
    schedule = Schedule.objects.get(name="every-five")
    assert (schedule.kind, schedule.interval, schedule.cron) == (
        "interval",
        timedelta(minutes=5),
        "",
    )


def test_admin_form_refuses_a_field_of_another_kind_naming_it(admin_client):
    data = form_data(name="both", kind="interval", interval="00:05:00", cron="30 2 * * *")
    response = admin_client.post(ADD, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["cron"]
    assert not Schedule.objects.filter(name="both").exists()


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("5 parsecs", "This field must be a duration: a number of seconds, words such as"),
        ("00:05", "'00:05' is ambiguous: write '5 minutes' or '0:05:00'"),
    ],
)
def test_admin_a_mistyped_interval_is_one_error_naming_the_accepted_forms(
    admin_client, typed, words
):
    response = admin_client.post(ADD, form_data(kind="interval", cron="", interval=typed))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["interval"]
    assert len(errors["interval"]) == 1
    assert words in errors["interval"][0]
    assert words.replace("'", "&#x27;") in response.content.decode()


def test_admin_an_interval_typed_in_words_is_saved(admin_client):
    response = admin_client.post(ADD, form_data(kind="interval", cron="", interval="5 minutes"))
    assert response.status_code == 302
    assert Schedule.objects.get(name="nightly").interval == timedelta(minutes=5)


def test_admin_an_empty_add_form_shows_no_error(admin_client):
    page = admin_client.get(ADD).content.decode()
    assert "errorlist" not in page
    assert "errornote" not in page


def test_admin_an_empty_add_form_posted_says_required_only_where_it_belongs(admin_client):
    data = form_data(name="", executor="", cron="", timezone="UTC")
    errors = admin_client.post(ADD, data).context["adminform"].form.errors
    assert set(errors) == {"name", "executor", "cron"}
    assert errors["cron"] == ["A cron schedule needs a value for cron."]


def test_admin_schedule_overdue_badge_filter_and_silence(admin_client, make_schedule):
    from django.utils import timezone

    now = timezone.now()
    minute = timedelta(minutes=1)
    silent = make_schedule(name="silent-sync", interval=minute, created_at=now - 10 * minute)
    failed_on_time(silent)
    fine = make_schedule(name="fine-sync", interval=minute, created_at=now - 10 * minute)
    Attempt.objects.create(
        schedule=fine, occurrence_at=now - minute, status="succeeded", finished_at=now
    )
    make_schedule(name="new-sync", interval=timedelta(hours=1))

    page = admin_client.get(CHANGELIST).content.decode()
    assert page.count('class="cadence-badge cadence-overdue"') == 1
    row = next(r for r in page.split("<tr") if "silent-sync" in r)
    assert "cadence-overdue" in row

    filtered = admin_client.get(f"{CHANGELIST}?silence=overdue").content.decode()
    assert "silent-sync" in filtered
    assert "fine-sync" not in filtered
    assert "new-sync" not in filtered

    detail = admin_client.get(change_url(silent)).content.decode()
    assert "last success: never; overdue since" in detail
    detail = admin_client.get(change_url(fine)).content.decode()
    assert "last success: never" not in detail
    assert "overdue from" in detail
