"""The schedule form's Executor select as staff meet it: every callable the allow-list lets
run is offered (registered with @job, listed in CADENCE_EXECUTORS, or defined in the module a
CADENCE_EXECUTORS pattern names), and nothing else; the help text says so."""

import re

import pytest
from django.test import override_settings
from django.urls import reverse

from django_cadence.models import Schedule

from .test_admin_schedules import form_data

ADD = reverse("admin:django_cadence_schedule_add")


def options(html):
    """The executor select's option values, by optgroup label."""
    select = re.search(r'<select name="executor".*?</select>', html, re.DOTALL)
    assert select, "no executor select on the page"
    groups = {}
    for label, body in re.findall(r'<optgroup label="([^"]*)">(.*?)</optgroup>', select[0], re.S):
        groups[label] = re.findall(r'<option value="([^"]*)"', body)
    return groups


def offered(html):
    return {value for values in options(html).values() for value in values}


def test_admin_executor_select_offers_what_a_pattern_allows(admin_client):
    """``CADENCE_EXECUTORS = ["tests.jobs.*"]`` (the test settings): the functions defined in
    ``tests.jobs`` are offered under the pattern that allows them."""
    html = admin_client.get(ADD).content.decode()
    groups = options(html)
    by_pattern = groups["Allowed by CADENCE_EXECUTORS &#x27;tests.jobs.*&#x27;"]
    assert {"tests.jobs.add", "tests.jobs.noop", "tests.jobs.async_add"} <= set(by_pattern)
    assert "tests.jobs.atomic_noop" in groups["Registered with @job"]
    assert "tests.jobs.atomic_noop" not in by_pattern  # offered once, under its registration


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("tests.jobs.sleep_or_cancel", "imported from another module"),
        ("tests.jobs.job", "imported from django_cadence"),
        ("tests.jobs.Permanent", "a class"),
        ("tests.jobs.BadRepr", "a class defined there"),
        ("tests.jobs._write_whole", "private"),
        ("tests.jobs.GATE", "not callable"),
        ("tests.jobs.json", "a module"),
        ("tests.jobs.os", "a module"),
    ],
)
def test_admin_executor_select_leaves_out_what_the_allow_list_refuses(admin_client, path, why):
    assert path not in offered(admin_client.get(ADD).content.decode()), why


def test_admin_executor_help_text_names_the_three_ways(admin_client):
    html = " ".join(admin_client.get(ADD).content.decode().split())
    assert (
        "A job registered with @job, listed in CADENCE_EXECUTORS, or defined in a module a "
        "CADENCE_EXECUTORS pattern names; nothing else runs." in html
    )


def test_admin_a_pattern_allowed_executor_is_saved_from_the_add_form(admin_client):
    data = form_data(name="pattern-job", executor="tests.jobs.add", payload='{"a": 1, "b": 2}')
    response = admin_client.post(ADD, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Schedule.objects.get(name="pattern-job").executor == "tests.jobs.add"


@override_settings(CADENCE_EXECUTORS=["tests.jobs.add", "tests.discovery.helpers.*"])
def test_admin_executor_select_follows_the_settings(admin_client):
    groups = options(admin_client.get(ADD).content.decode())
    assert groups["Listed in CADENCE_EXECUTORS"] == ["tests.jobs.add"]
    helpers = groups["Allowed by CADENCE_EXECUTORS &#x27;tests.discovery.helpers.*&#x27;"]
    assert helpers == ["tests.discovery.helpers.send_digest"]
    assert "tests.jobs.noop" not in offered(admin_client.get(ADD).content.decode())


@override_settings(
    CADENCE_EXECUTORS=["tests.jobs.*", "tests.no_such_module.*", "tests.jobs.no_such_function"]
)
def test_admin_executor_select_skips_entries_that_name_nothing(admin_client):
    """A mistyped entry (``manage.py check`` warns of it) offers nothing and breaks nothing."""
    response = admin_client.get(ADD)
    assert response.status_code == 200
    values = offered(response.content.decode())
    assert "tests.jobs.add" in values
    assert not any("no_such" in value for value in values)


@override_settings(CADENCE_EXECUTORS=["os.*", "subprocess.*"])
def test_admin_executor_select_offers_only_what_is_defined_under_the_pattern(admin_client):
    """``os.system`` is defined in ``posix``, ``subprocess.os`` is a module: neither runs, so
    neither is offered; ``os.*`` offers what ``os`` defines, as the settings asked."""
    values = offered(admin_client.get(ADD).content.decode())
    assert "os.system" not in values
    assert "subprocess.os" not in values
    assert "subprocess.run" in values  # defined in subprocess: the settings allowed it
    assert not any(value.endswith(".*") for value in values)
