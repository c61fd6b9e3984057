"""Every admin test starts with no cached dead-letter count in the app list's overview row,
so the queries a page makes do not depend on which test ran just before."""

import pytest

from django_cadence.admin import overview


@pytest.fixture(autouse=True)
def _fresh_overview_count():
    overview._cached.clear()
    yield
    overview._cached.clear()
