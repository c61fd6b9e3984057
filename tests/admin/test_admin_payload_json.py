"""JSON typed wrong in the schedule form's payload or metadata: the error on the page says
where (line and column) and what was expected, and the usual slips from Python get a hint."""

import pytest
from django.urls import reverse
from django.utils.html import escape

from django_cadence.models import Schedule

from .test_admin_schedules import form_data

ADD = reverse("admin:django_cadence_schedule_add")


def post(admin_client, field, text):
    overrides = {"kind": "interval", "cron": "", "interval": "60", "metadata": "{}", field: text}
    data = form_data(name="json", executor="tests.jobs.echo", **overrides)
    response = admin_client.post(ADD, data)
    assert response.status_code == 200
    assert not Schedule.objects.exists()
    return response


@pytest.mark.parametrize("field", ["payload", "metadata"])
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "Not valid JSON at line 1, column 2: expected a key in double quotes."),
        (
            "{'to': 'ops'}",
            (
                "Not valid JSON at line 1, column 2: expected a key in double quotes. JSON puts "
                "keys and strings in double quotes."
            ),
        ),
        (
            '{"urgent": True}',
            (
                "Not valid JSON at line 1, column 12: expected a value. JSON writes true, false "
                "and null in lower case."
            ),
        ),
        (
            '{\n  "to": "ops",\n}',
            (
                "Not valid JSON at line 3, column 1: expected a key in double quotes. JSON "
                "allows no comma before a closing bracket."
            ),
        ),
        ('{"to" "ops"}', "Not valid JSON at line 1, column 7: expected a colon."),
        ('{"to": "ops" "cc": 1}', "Not valid JSON at line 1, column 14: expected a comma."),
        ('{"to": "ops"} x', "Not valid JSON at line 1, column 15: expected nothing more."),
        ('{"to": "ops', "Not valid JSON at line 1, column 8: a string is not closed."),
    ],
    ids=[
        "syntax",
        "single-quotes",
        "python-true",
        "trailing-comma",
        "colon",
        "comma",
        "extra",
        "unclosed",
    ],
)
def test_admin_invalid_json_says_where_and_what_was_expected(admin_client, field, text, message):
    response = post(admin_client, field, text)
    errors = response.context["adminform"].form.errors
    assert errors[field] == [message]
    assert escape(message) in response.content.decode()
    assert escape(text) in response.content.decode()  # what was typed is kept to mend


def test_admin_json_nested_beyond_reading_is_an_error_not_a_crash(admin_client):
    response = post(admin_client, "payload", "[" * 100_000 + "]" * 100_000)
    assert response.context["adminform"].form.errors["payload"] == [
        "This JSON is nested too deeply to read."
    ]


def test_admin_json_number_beyond_reading_is_an_error_not_a_crash(admin_client):
    response = post(admin_client, "payload", '{"n": ' + "9" * 5_000 + "}")
    assert response.context["adminform"].form.errors["payload"] == [
        "A number in this JSON has too many digits to read."
    ]
