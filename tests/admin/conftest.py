"""The admin tests' users and helpers. Every admin test starts with no cached dead-letter
count in the app list's overview row, so the queries a page makes do not depend on which test
ran just before. The superuser behind ``admin_client`` is ``admin_user`` (tests/conftest.py)."""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from django_cadence.admin import overview


@pytest.fixture(autouse=True)
def _fresh_overview_count():
    overview._cached.clear()
    yield
    overview._cached.clear()


@pytest.fixture
def operator(db, client):
    """Log in a staff user holding only the given permissions (codenames) and return its
    client: ``client``, or with ``csrf=True`` one that checks CSRF tokens as a browser's
    form posts do."""

    def login(*codenames, csrf=False):
        user = User.objects.create_user("operator", is_staff=True)
        user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
        logged_in = Client(enforce_csrf_checks=True) if csrf else client
        logged_in.force_login(user)
        return logged_in

    return login


def clock_reads():
    """Statements that read the engine clock for one page, where it is the database server's:
    one for the page (its columns and its banner share it, ``admin/now.py``) and one for the
    sidebar's overview row (its count is cached for 10 s, and cold in each test). None on
    SQLite."""
    from django_cadence import store

    return 2 if store.of("default").has_server_clock else 0


def without_banner(captured):
    """The statements of a page less the warning banner's (``ops/health.fleet_reasons``),
    which every Cadence page reads: the banner read again now, on the same rows, takes the
    same branches; its statements are known by what precedes their ``WHERE``."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from django_cadence.ops.health import fleet_reasons

    def head(sql):
        return sql.partition(" WHERE ")[0]

    with CaptureQueriesContext(connection) as banner:
        fleet_reasons(timezone.now())
    heads = {head(q["sql"]) for q in banner.captured_queries}
    return [q for q in captured if head(q["sql"]) not in heads]
