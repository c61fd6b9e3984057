"""``CADENCE_NOTIFY``: each mistake is an error naming the key and what it takes, through
``manage.py check`` (E002) as a user meets it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_cadence.conf import NOTIFY_EVENTS, cadence_settings
from django_cadence.models import Event

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook", "secret": "s" * 16}


def test_the_settings_events_are_the_models():
    assert set(NOTIFY_EVENTS) == set(Event.values)


def test_a_full_setting_is_read(settings):
    settings.CADENCE_NOTIFY = {
        "failures": 5,
        "channels": {
            "ops": {"type": "mail", "to": ["ops@example.com"], "events": ["dead_letter"]},
            "hook": {**WEBHOOK, "timeout": 3, "tries": 4, "metadata": {"team": ["a", "b"]}},
            "crons": {"type": "sentry"},
            "slack": {"type": "callable", "path": "tests.jobs.notify_into_list"},
        },
    }
    notify = cadence_settings.NOTIFY
    assert notify.failures == 5
    assert [c.name for c in notify.channels] == ["ops", "hook", "crons", "slack"]
    hook = notify.channel("hook")
    assert (hook.timeout, hook.tries, hook.metadata) == (3.0, 4, (("team", ("a", "b")),))
    assert "s" * 16 not in repr(hook)  # the secret stays out of reprs and logs


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "CADENCE_NOTIFY must be a dict"),
        ({"channel": {}}, "unknown keys ['channel']"),
        ({"failures": 0}, 'CADENCE_NOTIFY["failures"] must be an integer of 1 or more'),
        ({"channels": {"ops": {"type": "pager"}}}, "\"type\" one of ('mail'"),
        ({"channels": {"o ps": {"type": "mail"}}}, "a channel's name is letters"),
        ({"channels": {"h": {**WEBHOOK, "url": "ftp://x"}}}, "must be an http:// or https:// URL"),
        ({"channels": {"h": {**WEBHOOK, "secret": "short"}}}, "16 characters or more"),
        ({"channels": {"h": {**WEBHOOK, "timeout": -1}}}, '["timeout"] must be more than zero'),
        ({"channels": {"h": {**WEBHOOK, "events": ["oops"]}}}, "['oops'] are not among"),
        ({"channels": {"h": {**WEBHOOK, "metadata": {"team": 3}}}}, "must be a string or a list"),
        ({"channels": {"m": {"type": "mail", "url": "x"}}}, "unknown keys ['url']"),
        ({"channels": {"c": {"type": "callable", "path": "nodots"}}}, "dotted path of a function"),
    ],
)
def test_a_wrong_setting_names_the_key_and_the_reason(settings, value, message):
    settings.CADENCE_NOTIFY = value
    with pytest.raises(ImproperlyConfigured) as raised:
        cadence_settings.NOTIFY  # noqa: B018 - reading it parses it
    assert message in str(raised.value)


def test_manage_py_check_reports_a_wrong_setting():
    from benchmarks.fleet import child_env, database_env
    from tests.support.commands import run_django

    env = child_env(database_env(), {"CADENCE_NOTIFY": {"channels": {"h": {"type": "x"}}}})
    done = run_django("check", "--settings=tests.settings", env=env)

    assert done.returncode == 1
    assert "(django_cadence.E002) CADENCE_NOTIFY[\"channels\"]['h'] must be a dict" in done.stderr


@pytest.mark.django_db
def test_a_schedule_naming_an_unknown_channel_is_refused(make_schedule, settings):
    from django.core.exceptions import ValidationError

    settings.CADENCE_NOTIFY = {"channels": {"ops": WEBHOOK}}
    make_schedule(notify="ops")
    make_schedule(notify="off")
    with pytest.raises(ValidationError) as refused:
        make_schedule(notify="ops, pager")
    expected = (
        "notify names pager, which CADENCE_NOTIFY does not configure (configured: ops); "
        "leave it empty for every channel, or write off."
    )
    assert refused.value.message_dict["notify"] == [expected]
