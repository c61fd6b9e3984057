"""Rule descriptions on whichever cron-descriptor is installed (1.x or 2.x), or none at all."""

import importlib.metadata

import pytest

from django_cadence.schedule import describe


@pytest.fixture(autouse=True)
def _fresh_cache():
    describe.describe_cron.cache_clear()
    yield
    describe.describe_cron.cache_clear()


def test_describe_cron_in_english_on_a_24_hour_clock_with_the_installed_line():
    line = importlib.metadata.version("cron-descriptor").split(".")[0]
    assert line in {"1", "2"}
    assert describe.describe_cron("30 14 * * *") == "At 14:30"
    assert describe.describe_cron("@weekly") == "At 00:00, only on Sunday"


def test_describe_cron_1x_options_take_no_arguments(monkeypatch):
    """cron-descriptor 1.x: ``Options()`` refuses keywords; the attributes are set after."""
    real = describe.cron_descriptor.Options

    class OptionsWithoutKeywords(real):
        def __init__(self) -> None:
            super().__init__(locale_code="de_DE", use_24hour_time_format=False)

    one_x = "locale_code" not in real.__init__.__code__.co_varnames  # 1.x installed: as it is
    monkeypatch.setattr(
        describe.cron_descriptor, "Options", real if one_x else OptionsWithoutKeywords
    )
    assert describe.describe_cron("30 14 * * *") == "At 14:30"


def test_describe_cron_without_cron_descriptor_is_the_expression(monkeypatch):
    monkeypatch.setattr(describe, "cron_descriptor", None)
    assert describe.describe_cron("30  2 * * *") == "30 2 * * *"


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("0 18 L * *", "At 18:00, on the last day of the month"),
        ("0 18 15,L * *", "At 18:00, on day 15 and the last day of the month"),
        ("0 18 L,1,15 * *", "At 18:00, on day 1, 15, and the last day of the month"),
        ("0 18 1-5,L * *", "At 18:00, on day 1 through 5 and the last day of the month"),
    ],
    ids=["alone", "listed", "listed-first", "with-a-range"],
)
def test_describe_cron_says_the_last_day_of_the_month(expr, words):
    assert describe.describe_cron(expr) == words
