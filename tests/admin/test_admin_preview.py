"""The schedule form's live preview: the next occurrences of an unsaved spec, as JSON."""

from datetime import timedelta

import pytest
from django.urls import reverse

from django_cadence.models import Schedule

PREVIEW = reverse("admin:django_cadence_schedule_preview")


def preview(client, **params):
    params.setdefault("timezone", "UTC")
    response = client.get(PREVIEW, params)
    assert response.status_code == 200
    return response.json()


def test_admin_preview_cron_in_its_zone(admin_client):
    data = preview(
        admin_client,
        kind="cron",
        cron="0 9 * * mon-fri",
        timezone="Europe/Paris",
        after="2026-06-05T12:00:00Z",  # a Friday
    )
    assert data["errors"] == {}
    assert data["description"] == "At 09:00, Monday through Friday"
    assert [o["utc"] for o in data["occurrences"][:3]] == [
        "2026-06-08T07:00:00Z",
        "2026-06-09T07:00:00Z",
        "2026-06-10T07:00:00Z",
    ]
    assert data["occurrences"][0]["local"] == "2026-06-08T09:00:00+02:00"
    assert data["occurrences"][0]["label"] == "2026-06-08 09:00:00 CEST"
    assert len(data["occurrences"]) == 10
    assert not any(o["dst_change"] for o in data["occurrences"])


def test_admin_preview_marks_the_dst_change(admin_client):
    """``30 2 * * *`` in New York: 02:30 does not exist on 2026-03-08 and fires at 03:00 EDT."""
    data = preview(
        admin_client,
        kind="cron",
        cron="30 2 * * *",
        timezone="America/New_York",
        after="2026-03-06T12:00:00Z",
    )
    occurrences = data["occurrences"][:3]
    assert [o["utc"] for o in occurrences] == [
        "2026-03-07T07:30:00Z",
        "2026-03-08T07:00:00Z",
        "2026-03-09T06:30:00Z",
    ]
    assert [o["label"] for o in occurrences] == [
        "2026-03-07 02:30:00 EST",
        "2026-03-08 03:00:00 EDT",
        "2026-03-09 02:30:00 EDT",
    ]
    assert [o["dst_change"] for o in data["occurrences"]] == [False, True] + [False] * 8


def test_admin_preview_interval_from_its_start(admin_client):
    data = preview(
        admin_client,
        kind="interval",
        interval="00:05:00",
        start_at_0="2026-06-01",
        start_at_1="00:02:00",
        max_occurrences="3",
        after="2026-05-01T00:00:00Z",
    )
    assert data["errors"] == {}
    assert data["description"] == "every 5 minutes"
    assert [o["utc"] for o in data["occurrences"]] == [
        "2026-06-01T00:02:00Z",
        "2026-06-01T00:07:00Z",
        "2026-06-01T00:12:00Z",
    ]


def test_admin_preview_unsaved_interval_is_anchored_at_now(admin_client):
    data = preview(admin_client, kind="interval", interval="01:00:00", after="2026-06-01T10:30:00Z")
    assert data["occurrences"][0]["utc"] == "2026-06-01T11:30:00Z"


def test_admin_preview_of_a_saved_interval_keeps_its_anchor(admin_client, make_schedule):
    """Editing a saved schedule previews from its own anchor (its creation), not from now."""
    from datetime import UTC, datetime

    schedule = make_schedule(
        interval=timedelta(hours=1), created_at=datetime(2026, 1, 1, 0, 20, tzinfo=UTC)
    )
    data = preview(
        admin_client,
        kind="interval",
        interval="02:00:00",
        object_id=schedule.pk,
        after="2026-06-01T10:30:00Z",
    )
    assert data["occurrences"][0]["utc"] == "2026-06-01T12:20:00Z"
    schedule.refresh_from_db()
    assert schedule.interval == timedelta(hours=1)  # previewing never saves


def test_admin_preview_once_reads_run_at_in_the_schedules_zone(admin_client):
    data = preview(
        admin_client,
        kind="once",
        run_at_0="2026-07-01",
        run_at_1="08:00:00",
        timezone="Asia/Tokyo",
        after="2026-06-01T00:00:00Z",
    )
    assert data["occurrences"] == [
        {
            "utc": "2026-06-30T23:00:00Z",
            "local": "2026-07-01T08:00:00+09:00",
            "label": "2026-07-01 08:00:00 JST",
            "utc_label": "2026-06-30 23:00:00 UTC",
            "dst_change": False,
        }
    ]


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"kind": "cron", "cron": "61 * * * *"}, "cron", "out of range"),
        ({"kind": "cron", "cron": "0 0 30 2 *"}, "cron", "never"),
        ({"kind": "cron", "cron": "@daily", "timezone": "Nowhere/Land"}, "timezone", "Unknown"),
        ({"kind": "interval", "interval": "soon"}, "interval", "must be a duration"),
        ({"kind": "interval", "interval": "00:00:00.1"}, "interval", "at least"),
        ({"kind": "fortnightly"}, "kind", "Select a valid choice"),
        ({"kind": "cron", "cron": "@daily", "after": "yesterday"}, "after", "ISO 8601"),
    ],
    ids=[
        "cron-range",
        "cron-never",
        "zone",
        "duration",
        "too-short",
        "kind",
        "after",
    ],
)
def test_admin_preview_reports_errors_per_field(admin_client, params, field, message):
    data = preview(admin_client, **params)
    assert data["occurrences"] == []
    assert field in data["errors"], data["errors"]
    assert message in " ".join(data["errors"][field])


def test_admin_preview_never_imports_or_runs_the_executor(admin_client, make_schedule, monkeypatch):
    from django_cadence.executors import allow_list

    schedule = make_schedule(executor="tests.jobs.record_call", payload={"label": "x"})
    monkeypatch.setattr(allow_list, "resolve", lambda path: pytest.fail("resolved " + path))
    data = preview(admin_client, kind="cron", cron="@hourly", object_id=schedule.pk)
    assert data["errors"] == {}
    assert not Schedule.objects.exclude(pk=schedule.pk).exists()


@pytest.mark.parametrize(
    ("codenames", "status"),
    [
        ((), 403),
        (("view_schedule",), 403),
        (("add_schedule",), 200),
        (("change_schedule",), 200),
    ],
)
def test_admin_preview_needs_add_or_change_permission(operator, codenames, status):
    client = operator(*codenames)
    response = client.get(PREVIEW, {"kind": "cron", "cron": "@daily", "timezone": "UTC"})
    assert response.status_code == status


def test_admin_preview_of_a_saved_schedule_needs_change_permission(operator, make_schedule):
    schedule = make_schedule()
    client = operator("add_schedule", "view_schedule")
    params = {"kind": "cron", "cron": "@daily", "timezone": "UTC", "object_id": schedule.pk}
    assert client.get(PREVIEW, params).status_code == 403


def test_admin_preview_redirects_anonymous_users_to_login(client, db):
    response = client.get(PREVIEW, {"kind": "cron", "cron": "@daily", "timezone": "UTC"})
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_admin_preview_of_an_empty_new_form_is_a_hint_not_an_error(admin_client):
    data = preview(admin_client, kind="cron", cron="")
    assert data["errors"] == {}
    assert data["hint"] == "Fill in cron to see the next occurrences."


def test_admin_preview_reads_an_interval_in_words(admin_client):
    data = preview(admin_client, kind="interval", interval="5 minutes")
    assert data["errors"] == {}
    assert len(data["occurrences"]) == 10


def test_admin_preview_of_the_last_day_of_the_month(admin_client):
    data = preview(
        admin_client,
        kind="cron",
        cron="0 18 l * *",
        timezone="Europe/London",
        after="2027-01-01T00:00:00Z",
    )
    assert data["errors"] == {}
    assert data["description"] == "At 18:00, on the last day of the month"
    assert [o["label"] for o in data["occurrences"][:4]] == [
        "2027-01-31 18:00:00 GMT",
        "2027-02-28 18:00:00 GMT",
        "2027-03-31 18:00:00 BST",
        "2027-04-30 18:00:00 BST",
    ]
