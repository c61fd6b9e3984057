from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_cadence.conf import cadence_settings, setting_default, setting_names, validate_all


def test_conf_defaults_are_documented_values():
    assert timedelta(seconds=1) == cadence_settings.MIN_INTERVAL
    assert timedelta(seconds=60) == cadence_settings.MISFIRE_GRACE
    assert cadence_settings.MAX_RECOVERIES == 3
    assert cadence_settings.SESSION_LIVENESS is True
    assert cadence_settings.PLAN_BATCH == 500
    assert cadence_settings.EXECUTORS == ("tests.jobs.*",)
    assert cadence_settings.METRICS_ADDRESS == "127.0.0.1"


def test_conf_every_setting_is_prefixed_and_has_a_default():
    for name in setting_names():
        assert name.startswith("CADENCE_")
        setting_default(name)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("CADENCE_MIN_INTERVAL", 5, timedelta(seconds=5)),
        ("CADENCE_MIN_INTERVAL", 0.5, timedelta(milliseconds=500)),
        ("CADENCE_MIN_INTERVAL", timedelta(minutes=1), timedelta(minutes=1)),
        ("CADENCE_MISFIRE_GRACE", 0, timedelta(0)),
        ("CADENCE_MAX_CATCHUP", 7, 7),
        ("CADENCE_PLAN_BATCH", 10_000, 10_000),
        ("CADENCE_METRICS_ADDRESS", "0.0.0.0", "0.0.0.0"),
        ("CADENCE_METRICS_ADDRESS", "::", "::"),
        ("CADENCE_METRICS_ADDRESS", "10.0.0.7", "10.0.0.7"),
        ("CADENCE_METRICS_ADDRESS", "localhost", "localhost"),
        ("CADENCE_METRICS_ADDRESS", "metrics-1.internal", "metrics-1.internal"),
    ],
    ids=[
        "int-seconds",
        "float-seconds",
        "timedelta",
        "zero-grace-allowed",
        "int",
        "plan-batch",
        "address-every-ipv4",
        "address-every-ipv6",
        "address-one-interface",
        "address-localhost",
        "address-host-name",
    ],
)
def test_conf_accepts(name, value, expected):
    attribute = name.removeprefix("CADENCE_")
    with override_settings(**{name: value}):
        assert getattr(cadence_settings, attribute) == expected


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("CADENCE_MIN_INTERVAL", 0, "more than zero"),
        ("CADENCE_MIN_INTERVAL", -1, "more than zero"),
        ("CADENCE_MIN_INTERVAL", "5", "timedelta or a number of seconds"),
        ("CADENCE_MISFIRE_GRACE", -5, "zero or more"),
        ("CADENCE_MAX_RECOVERIES", 0, "integer of 1 or more"),
        ("CADENCE_MAX_ATTEMPTS", True, "integer of 1 or more"),
        ("CADENCE_EXECUTORS", "myapp.jobs.*", "list of strings"),
        ("CADENCE_EXECUTORS", ["ok.*", ""], "non-empty strings"),
        ("CADENCE_SESSION_LIVENESS", "no", "True or False"),
        ("CADENCE_PLAN_BATCH", 0, "from 1 to 10000"),
        ("CADENCE_PLAN_BATCH", 10_001, "from 1 to 10000"),
        ("CADENCE_METRICS_ADDRESS", "", "an IP address or a host name"),
        ("CADENCE_METRICS_ADDRESS", None, "an IP address or a host name"),
        ("CADENCE_METRICS_ADDRESS", "0.0.0.0:9464", "an IP address or a host name"),
        ("CADENCE_METRICS_ADDRESS", "http://127.0.0.1", "an IP address or a host name"),
        ("CADENCE_METRICS_ADDRESS", "-bad-.example", "an IP address or a host name"),
        ("CADENCE_METRICS_ADDRESS", 127, "an IP address or a host name"),
    ],
    ids=[
        "zero-interval",
        "negative-interval",
        "string-duration",
        "negative-grace",
        "zero-recoveries",
        "bool-is-not-int",
        "executors-not-list",
        "executors-empty-pattern",
        "liveness-not-bool",
        "plan-batch-zero",
        "plan-batch-too-large",
        "address-empty",
        "address-none",
        "address-with-port",
        "address-url",
        "address-bad-label",
        "address-not-text",
    ],
)
def test_conf_rejects_naming_the_setting(name, value, fragment):
    attribute = name.removeprefix("CADENCE_")
    with override_settings(**{name: value}):
        with pytest.raises(ImproperlyConfigured, match=name) as excinfo:
            getattr(cadence_settings, attribute)
        assert fragment in str(excinfo.value)
        assert [str(p) for p in validate_all()] == [str(excinfo.value)]


def test_settings_are_cached_until_a_setting_changes(settings):
    """Parsed once; ``override_settings`` (here pytest-django's ``settings``) drops the cache."""
    from django_cadence.conf import cadence_settings

    settings.CADENCE_CONCURRENCY = 3
    assert cadence_settings.CONCURRENCY == 3
    assert cadence_settings._cache["CADENCE_CONCURRENCY"] == 3
    settings.CADENCE_CONCURRENCY = 7
    assert cadence_settings.CONCURRENCY == 7
