"""Schedule.metadata: free labels for people (team, owner, runbook), never read by the engine."""

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from django_cadence.models import Schedule
from django_cadence.ops import reconcile
from django_cadence.ops.reconcile import InvalidDeclarations
from tests.admin.test_admin_schedules import form_data

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
LABELS = {"team": "billing", "owner": "ana", "runbook": "https://wiki.example.com/invoices"}


def test_metadata_defaults_to_an_empty_object(make_schedule):
    assert Schedule.objects.get(pk=make_schedule().pk).metadata == {}


@pytest.mark.parametrize("value", [["team", "billing"], "billing", 3])
def test_metadata_that_is_not_an_object_is_refused_naming_the_field(make_schedule, value):
    schedule = make_schedule()
    schedule.metadata = value
    with pytest.raises(ValidationError) as caught:
        schedule.full_clean()
    (message,) = caught.value.message_dict["metadata"]
    assert message.startswith("metadata must be a JSON object")


def test_declared_schedules_may_set_metadata(settings):
    settings.CADENCE_SCHEDULES = {
        "nightly": {"cron": "0 3 * * *", "executor": "tests.jobs.echo", "metadata": LABELS}
    }
    reconcile.reconcile(NOW)
    assert Schedule.objects.get(name="nightly").metadata == LABELS
    settings.CADENCE_SCHEDULES["nightly"]["metadata"] = {"team": "payments"}
    result = reconcile.reconcile(NOW)
    assert Schedule.objects.get(name="nightly").metadata == {"team": "payments"}
    assert any("metadata" in line for line in result.lines())


def test_a_declared_metadata_that_is_not_an_object_names_the_schedule_and_field(settings):
    settings.CADENCE_SCHEDULES = {
        "nightly": {"cron": "0 3 * * *", "executor": "tests.jobs.echo", "metadata": "billing"}
    }
    with pytest.raises(InvalidDeclarations) as caught:
        reconcile.reconcile(NOW)
    assert "nightly" in str(caught.value)
    assert "metadata must be a JSON object" in str(caught.value)


def test_the_schedules_list_finds_a_schedule_by_its_metadata(admin_client, make_schedule):
    make_schedule(name="invoices", metadata=LABELS)
    make_schedule(name="reports", metadata={"team": "data"})
    changelist = reverse("admin:django_cadence_schedule_changelist")
    for query in ("billing", "BILL", "wiki.example.com"):
        response = admin_client.get(changelist, {"q": query})
        assert [s.name for s in response.context["cl"].result_list] == ["invoices"]


def test_the_schedule_page_shows_metadata_and_refuses_a_non_object(admin_client, make_schedule):
    schedule = make_schedule(metadata=LABELS)
    page = reverse("admin:django_cadence_schedule_change", args=[schedule.pk])
    html = admin_client.get(page).content.decode()
    assert "wiki.example.com/invoices" in html
    response = admin_client.post(
        reverse("admin:django_cadence_schedule_add"),
        form_data(name="labelled", metadata='["billing"]'),
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["metadata"] == [
        'metadata must be a JSON object such as {"team": "billing"}, not list.'
    ]
    response = admin_client.post(
        reverse("admin:django_cadence_schedule_add"),
        form_data(name="labelled", metadata='{"team": "billing"}'),
    )
    assert response.status_code == 302
    assert Schedule.objects.get(name="labelled").metadata == {"team": "billing"}


# --- the payload's rules ------------------------------------------------------------------------


def _deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"since": datetime(2026, 1, 1, tzinfo=UTC)}, "a value of type datetime at ['since']"),
        ({"ratio": float("nan")}, "JSON numbers are finite"),
        ({"file": "r\udcffport.csv"}, "a NUL character or a lone surrogate at ['file']"),
        ({"r\udcffport": 1}, "a NUL character or a lone surrogate"),
        ({"note": "a\x00b"}, "a NUL character or a lone surrogate at ['note']"),
        ({1: "x"}, "a key of type int"),
        (_deep(40), "nested more than 32 levels deep"),
        ({"blob": "x" * 70_000}, "the limit is 65536 (CADENCE_PAYLOAD_MAX_BYTES)"),
    ],
    ids=["datetime", "nan", "surrogate", "surrogate-key", "nul", "int-key", "deep", "large"],
)
@pytest.mark.parametrize("how", ["save", "full_clean"])
def test_metadata_gets_the_payloads_rules_as_a_validation_error_naming_the_field(
    make_schedule, metadata, message, how
):
    schedule = make_schedule()
    schedule.metadata = metadata
    with pytest.raises(ValidationError) as caught:
        schedule.save() if how == "save" else schedule.full_clean()
    messages = caught.value.message_dict["metadata"]
    assert any(message in text for text in messages), messages
    assert Schedule.objects.get(pk=schedule.pk).metadata == {}


def test_metadata_secret_keys_are_redacted_in_the_reconcile_diff(settings):
    settings.CADENCE_SCHEDULES = {
        "nightly": {
            "cron": "0 3 * * *",
            "executor": "tests.jobs.echo",
            "metadata": {"team": "billing", "pager_token": "pt-1"},
        }
    }
    reconcile.reconcile(NOW)
    settings.CADENCE_SCHEDULES["nightly"]["metadata"] = {"team": "data", "pager_token": "pt-2"}
    lines = "\n".join(reconcile.reconcile(NOW).lines())
    assert "metadata" in lines
    assert "pt-1" not in lines
    assert "pt-2" not in lines
    assert '"team": "data"' in lines
