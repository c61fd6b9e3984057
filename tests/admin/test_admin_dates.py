"""The attempt pages' date hierarchy: Django's links and look, from MIN/MAX instead of DISTINCT."""

from datetime import UTC, datetime

import pytest
from django.contrib.admin.templatetags.admin_list import date_hierarchy as django_date_hierarchy
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_cadence.admin.dates import date_hierarchy
from django_cadence.models import Attempt

PAGES = ("attempt", "deadletter", "retry")


@pytest.fixture
def occurrences(make_schedule):
    """Make attempts of every page's kind (dead letter, retry, success) at the given instants."""
    schedules = {status: make_schedule() for status in ("dead_letter", "pending", "succeeded")}

    def make(*instants):
        Attempt.objects.bulk_create(
            Attempt(
                schedule=schedule,
                occurrence_at=at,
                status=status,
                tries=1,
                retry_at=at if status == "pending" else None,
            )
            for at in instants
            for status, schedule in schedules.items()
        )

    return make


def hierarchy(admin_client, query="", page="attempt"):
    """The date hierarchy's links and titles on a page, and the SQL the page ran."""
    url = reverse(f"admin:django_cadence_{page}_changelist") + query
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(url)
    assert response.status_code == 200
    return response, [q["sql"] for q in queries.captured_queries]


def titles(context):
    return [choice["title"] for choice in context["choices"]]


def at(*parts):
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize(
    "query",
    ["", "?occurrence_at__year=2026", "?occurrence_at__year=2026&occurrence_at__month=3"],
)
def test_admin_date_hierarchy_runs_no_distinct_query(admin_client, occurrences, page, query):
    occurrences(at(2025, 11, 2, 8), at(2026, 3, 5, 9), at(2026, 3, 9, 23, 30))
    response, sql = hierarchy(admin_client, query, page)
    assert not [s for s in sql if "DISTINCT" in s.upper()]
    assert [s for s in sql if "MIN(" in s.upper() and "MAX(" in s.upper()]
    assert 'class="toplinks"' in response.content.decode()


def test_admin_date_hierarchy_day_level_runs_no_query_for_itself(admin_client, occurrences):
    occurrences(at(2026, 3, 5, 9))
    response, sql = hierarchy(
        admin_client, "?occurrence_at__year=2026&occurrence_at__month=3&occurrence_at__day=5"
    )
    assert not [s for s in sql if "MIN(" in s.upper()]
    html = response.content.decode()
    assert 'href="?occurrence_at__month=3&amp;occurrence_at__year=2026"' in html  # back
    assert "March 5" in html


def test_admin_date_hierarchy_offers_every_year_between_the_first_and_the_last(
    admin_client, occurrences
):
    occurrences(at(2024, 12, 31, 23), at(2026, 3, 5, 9))
    response, _sql = hierarchy(admin_client)
    context = date_hierarchy(response.context["cl"])
    assert context["back"] is None
    assert titles(context) == ["2024", "2025", "2026"]  # 2025 has none: an empty page
    html = response.content.decode()
    assert 'href="?occurrence_at__year=2025"' in html


def test_admin_date_hierarchy_lists_the_months_and_days_of_the_span(admin_client, occurrences):
    occurrences(at(2026, 1, 10, 9), at(2026, 3, 5, 9), at(2026, 3, 9, 23, 30))
    response, _sql = hierarchy(admin_client, "?occurrence_at__year=2026")
    months = date_hierarchy(response.context["cl"])
    assert titles(months) == ["January 2026", "February 2026", "March 2026"]
    assert months["back"]["title"] == "All dates"
    assert months["choices"][1]["link"] == "?occurrence_at__month=2&occurrence_at__year=2026"

    response, _sql = hierarchy(admin_client, "?occurrence_at__year=2026&occurrence_at__month=3")
    days = date_hierarchy(response.context["cl"])
    assert titles(days) == [f"March {d}" for d in range(5, 10)]
    assert days["back"] == {"link": "?occurrence_at__year=2026", "title": "2026"}
    link = "?occurrence_at__day=7&amp;occurrence_at__month=3&amp;occurrence_at__year=2026"
    assert f'href="{link}"' in response.content.decode()


def test_admin_date_hierarchy_keeps_the_other_filters_and_uses_them(admin_client, make_schedule):
    schedule = make_schedule()
    Attempt.objects.create(schedule=schedule, occurrence_at=at(2024, 5, 1), status="succeeded")
    Attempt.objects.create(schedule=schedule, occurrence_at=at(2026, 5, 1), status="dead_letter")
    Attempt.objects.create(schedule=schedule, occurrence_at=at(2026, 5, 3), status="dead_letter")
    response, _sql = hierarchy(admin_client, "?status__exact=dead_letter")
    context = date_hierarchy(response.context["cl"])  # only May 2026 holds dead letters
    assert titles(context) == ["May 1", "May 2", "May 3"]
    assert context["choices"][0]["link"] == (
        "?occurrence_at__day=1&occurrence_at__month=5&occurrence_at__year=2026"
        "&status__exact=dead_letter"
    )


@pytest.mark.parametrize(
    ("instants", "query"),
    [
        ([at(2025, 6, 1), at(2026, 2, 1)], ""),  # years
        ([at(2026, 1, 1, 5), at(2026, 2, 3), at(2026, 3, 9)], ""),  # months of the only year
        ([at(2026, 4, 8, 12), at(2026, 4, 9, 12)], ""),  # days of the only month
        ([at(2026, 4, 8, 12), at(2026, 4, 9, 12)], "?occurrence_at__year=2026"),
        ([at(2026, 4, 8, 12)], "?occurrence_at__year=2026&occurrence_at__month=4"),
        (
            [at(2026, 4, 8, 12)],
            "?occurrence_at__year=2026&occurrence_at__month=4&occurrence_at__day=8",
        ),
        ([], ""),
        ([], "?occurrence_at__year=2026"),
    ],
)
@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Tokyo"])
def test_admin_date_hierarchy_matches_django_when_every_period_has_attempts(
    admin_client, occurrences, instants, query, zone
):
    """Same levels, links and titles as Django's tag, in any current time zone.

    Django's tag converts every row to the zone in SQL, which MariaDB cannot do without its
    time zone tables; there only ours runs (it converts two values in Python).
    """
    occurrences(*instants)
    with override_settings(TIME_ZONE=zone):
        response, _sql = hierarchy(admin_client, query)
        cl = response.context["cl"]
        ours = date_hierarchy(cl)
        assert ours.pop("field_name") == "occurrence at"  # Django 6's template reads it
        if zone == "UTC" or connection.features.has_zoneinfo_database:
            theirs = django_date_hierarchy(cl)
            theirs.pop("field_name", None)  # Django 6 has it, Django 5 does not
            assert ours == theirs


@override_settings(TIME_ZONE="America/New_York")
def test_admin_date_hierarchy_uses_the_current_time_zone(admin_client, occurrences):
    occurrences(at(2026, 1, 1, 3), at(2026, 1, 1, 4, 30))  # 22:00 and 23:30 on Dec 31 there
    response, _sql = hierarchy(admin_client)
    context = date_hierarchy(response.context["cl"])
    assert context["back"] == {"link": "?occurrence_at__year=2025", "title": "2025"}
    assert context["choices"] == [
        {
            "link": "?occurrence_at__day=31&occurrence_at__month=12&occurrence_at__year=2025",
            "title": "December 31",
        }
    ]
    response, _sql = hierarchy(admin_client, context["choices"][0]["link"])
    assert len(response.context["cl"].result_list) == 6  # and the link lists them
