"""Attempts, dead letters and retries: read-only pages that stay cheap on huge tables."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from django_cadence.admin import attempts as attempts_admin
from django_cadence.admin.attempts import AtLeast, CappedCountPaginator
from django_cadence.models import Attempt
from tests.admin.conftest import clock_reads, without_banner

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAGES = ("attempt", "deadletter", "retry")

HISTORY = [
    {
        "try": 1,
        "worker": "host-a:123",
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:02.500000+00:00",
        "result": "failed",
        "error": "RuntimeError: first failure",
    },
    {
        "try": 2,
        "worker": "host-b:456",
        "started_at": "2026-01-01T00:01:00+00:00",
        "finished_at": "2026-01-01T00:01:01+00:00",
        "result": "failed",
        "error": "RuntimeError: second failure",
    },
]


def changelist(page):
    return reverse(f"admin:django_cadence_{page}_changelist")


def change(page, attempt):
    return reverse(f"admin:django_cadence_{page}_change", args=[attempt.pk])


@pytest.fixture
def three(make_schedule):
    """A dead letter, a pending retry and a success of one schedule."""
    schedule = make_schedule(name="billing")
    dead = Attempt.objects.create(
        schedule=schedule,
        occurrence_at=T0,
        status="dead_letter",
        tries=2,
        started_at=T0 + timedelta(minutes=1),
        finished_at=T0 + timedelta(minutes=1, seconds=1),
        worker="host-b:456",
        error="RuntimeError: second failure\n[dead letter: no tries left]",
        history=HISTORY,
    )
    retry = Attempt.objects.create(
        schedule=schedule,
        occurrence_at=T0 + timedelta(hours=1),
        status="pending",
        tries=1,
        retry_at=T0 + timedelta(hours=2),
        error="RuntimeError: flaky",
        history=HISTORY[:1],
    )
    done = Attempt.objects.create(
        schedule=schedule,
        occurrence_at=T0 + timedelta(hours=2),
        status="succeeded",
        tries=1,
        outcome={"sent": 3},
    )
    return {"deadletter": dead, "retry": retry, "succeeded": done}


@pytest.mark.parametrize(
    ("page", "shown", "hidden"),
    [
        ("attempt", {"deadletter", "retry", "succeeded"}, set()),
        ("deadletter", {"deadletter"}, {"retry", "succeeded"}),
        ("retry", {"retry"}, {"deadletter", "succeeded"}),
    ],
)
def test_admin_attempt_changelists_list_their_rows(admin_client, three, page, shown, hidden):
    response = admin_client.get(changelist(page))
    assert response.status_code == 200
    listed = {a.pk for a in response.context["cl"].result_list}
    assert listed == {three[name].pk for name in shown}
    assert not listed & {three[name].pk for name in hidden}


@pytest.mark.parametrize("page", PAGES)
def test_admin_attempt_detail_shows_tries_key_and_lease(admin_client, three, page):
    attempt = three["retry"] if page == "retry" else three["deadletter"]
    response = admin_client.get(change(page, attempt))
    assert response.status_code == 200
    html = response.content.decode()
    assert f"cadence:{attempt.schedule_id}:schedule:2026-01-01T0" in html  # idempotency key
    assert "host-a:123" in html
    assert "RuntimeError: first failure" in html
    assert "2.5 s" in html  # the first try's duration
    assert 'class="cadence-history"' in html
    assert "billing" in html


def test_admin_attempt_detail_shows_why_a_try_marked_itself_uncertain(admin_client, three):
    dead = three["deadletter"]
    Attempt.objects.filter(pk=dead.pk).update(uncertain="charging <card>")
    html = admin_client.get(change("deadletter", dead)).content.decode()
    assert "charging &lt;card&gt;" in html
    assert "charging <card>" not in html


def test_admin_attempt_detail_shows_outcome(admin_client, three):
    html = admin_client.get(change("attempt", three["succeeded"])).content.decode()
    assert "&quot;sent&quot;: 3" in html


@pytest.mark.parametrize("page", PAGES)
def test_admin_attempts_are_read_only(admin_client, three, page):
    attempt = three["retry"] if page == "retry" else three["deadletter"]
    assert admin_client.get(reverse(f"admin:django_cadence_{page}_add")).status_code == 403
    response = admin_client.get(change(page, attempt))
    assert response.context["has_change_permission"] is False
    assert 'name="_save"' not in response.content.decode()
    before = Attempt.objects.get(pk=attempt.pk).status
    admin_client.post(change(page, attempt), {"status": "succeeded"})
    assert Attempt.objects.get(pk=attempt.pk).status == before
    delete = reverse(f"admin:django_cadence_{page}_delete", args=[attempt.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    actions = response.context.get("action_form")
    assert actions is None or "delete_selected" not in str(actions)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status__exact=dead_letter", {"deadletter"}),
        ("status__exact=pending", {"retry"}),
        ("trigger__exact=schedule", {"deadletter", "retry", "succeeded"}),
        ("occurrence_at__year=2026&occurrence_at__month=1&occurrence_at__day=1", None),
    ],
)
def test_admin_attempt_filters(admin_client, three, query, expected):
    response = admin_client.get(f"{changelist('attempt')}?{query}")
    assert response.status_code == 200
    listed = {a.pk for a in response.context["cl"].result_list}
    wanted = set(three) if expected is None else expected
    assert listed == {three[name].pk for name in wanted}


def test_admin_attempt_schedule_filter_uses_dalf_autocomplete(admin_client, three, make_schedule):
    other = make_schedule(name="other")
    Attempt.objects.create(schedule=other, occurrence_at=T0, status="succeeded")
    schedule_id = three["retry"].schedule_id
    response = admin_client.get(f"{changelist('attempt')}?schedule__id__exact={schedule_id}")
    html = response.content.decode()
    assert "django-admin-list-filter-ajax" in html
    assert {a.schedule_id for a in response.context["cl"].result_list} == {schedule_id}
    # The autocomplete endpoint dalf calls answers from ScheduleAdmin.search_fields.
    found = admin_client.get(
        reverse("admin:autocomplete"),
        {
            "app_label": "django_cadence",
            "model_name": "attempt",
            "field_name": "schedule",
            "term": "bill",
        },
    ).json()
    assert [r["text"] for r in found["results"]] == ["billing"]


def test_admin_attempt_changelist_links_date_hierarchy(admin_client, three):
    response = admin_client.get(changelist("attempt"))
    assert response.context["cl"].date_hierarchy == "occurrence_at"
    assert response.context["cl"].show_full_result_count is False


@pytest.mark.parametrize(("schedules", "per_schedule"), [(5, 3), (50, 30)])
@pytest.mark.parametrize("page", PAGES)
def test_admin_attempt_changelist_query_count_does_not_grow(
    admin_client, make_schedule, django_assert_num_queries, page, schedules, per_schedule
):
    rows = []
    for _ in range(schedules):
        schedule = make_schedule()
        for i in range(per_schedule):
            status = ("succeeded", "dead_letter", "pending")[i % 3]
            rows.append(
                Attempt(
                    schedule=schedule,
                    occurrence_at=T0 + timedelta(minutes=i),
                    status=status,
                    tries=1,
                    retry_at=T0 if status == "pending" else None,
                    error="boom",
                )
            )
    Attempt.objects.bulk_create(rows)
    # Session, user, the capped count, the page, its schedules (one prefetch query), and the
    # date hierarchy's first and last occurrence (its days come from those, not from a query),
    # and the dead letters of the last 24 h for the navigation sidebar's overview row; then the
    # warning banner's four reads (the oldest due schedule, the oldest ready attempts and their
    # schedules, live workers: some attempts here are ready); and the engine clock's.
    with django_assert_num_queries(11 + clock_reads()):
        response = admin_client.get(changelist(page))
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == min(
        100, len(rows) // (1 if page == "attempt" else 3)
    )


def attempt_selects(queries):
    """The statements that read attempt rows (not counts, not the date range, not the
    banner's)."""
    return [
        q["sql"]
        for q in without_banner(queries.captured_queries)
        if q["sql"].startswith("SELECT")
        and "cadence_attempt" in q["sql"].partition(" FROM ")[2][:40]
        and "ORDER BY" in q["sql"]
    ]


@pytest.mark.parametrize("page", PAGES)
def test_admin_attempt_changelists_fetch_schedules_without_a_join(admin_client, three, page):
    """MariaDB plans "page of attempts JOIN schedule" from the schedules and sorts every attempt."""
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(changelist(page))
    assert response.status_code == 200
    assert "billing" in response.content.decode()  # the schedule column, from the prefetch
    pages = attempt_selects(queries)
    assert len(pages) == 1
    assert "JOIN" not in pages[0].upper()
    page_queries = without_banner(queries.captured_queries)
    schedules = [q["sql"] for q in page_queries if "cadence_schedule" in q["sql"]]
    assert len(schedules) == 1  # the page's schedules, by primary key


def test_admin_discard_confirmation_fetches_schedules_without_a_join(admin_client, three):
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.post(
            changelist("deadletter"),
            {"action": "discard", "select_across": "1", "index": "0", "_selected_action": ["0"]},
        )
    assert response.status_code == 200
    assert "billing" in response.content.decode()
    assert not [sql for sql in attempt_selects(queries) if "JOIN" in sql.upper()]


def test_admin_dead_letters_are_listed_newest_occurrence_first(admin_client, make_schedule):
    """By occurrence, as the (status, occurrence_at) index gives them, not by finished_at."""
    schedule = make_schedule()
    older = Attempt.objects.create(
        schedule=schedule,
        occurrence_at=T0,
        status="dead_letter",
        finished_at=T0 + timedelta(hours=5),
    )
    newer = Attempt.objects.create(
        schedule=schedule,
        occurrence_at=T0 + timedelta(hours=1),
        status="dead_letter",
        finished_at=T0 + timedelta(hours=1, minutes=1),
    )
    response = admin_client.get(changelist("deadletter"))
    assert [a.pk for a in response.context["cl"].result_list] == [newer.pk, older.pk]


def test_admin_capped_paginator_stops_counting_at_the_cap(make_schedule):
    schedule = make_schedule()
    Attempt.objects.bulk_create(
        Attempt(schedule=schedule, occurrence_at=T0 + timedelta(seconds=i), status="succeeded")
        for i in range(30)
    )
    paginator = CappedCountPaginator(Attempt.objects.all(), 10)
    paginator.cap = 25
    assert paginator.count == 25
    assert isinstance(paginator.count, AtLeast)
    assert str(paginator.count) == "25+"
    assert paginator.num_pages == 3
    exact = CappedCountPaginator(Attempt.objects.all(), 10)
    assert exact.count == 30
    assert str(exact.count) == "30"


def test_admin_attempt_changelist_shows_a_capped_count(admin_client, make_schedule, monkeypatch):
    monkeypatch.setattr(CappedCountPaginator, "cap", 5)
    schedule = make_schedule()
    Attempt.objects.bulk_create(
        Attempt(schedule=schedule, occurrence_at=T0 + timedelta(seconds=i), status="succeeded")
        for i in range(8)
    )
    html = admin_client.get(changelist("attempt")).content.decode()
    assert "5+ attempts" in html


@pytest.mark.parametrize(
    ("query", "found"),
    [("nightly-import", {"a", "b"}), ("ConnectionRefused", set()), ("worker-7", {"b"})],
    ids=["schedule-name", "error-text-not-searched", "worker"],
)
def test_attempts_search_by_schedule_name_and_worker_not_error_text(
    admin_client, make_schedule, query, found
):
    nightly = make_schedule(name="nightly-import")
    other = make_schedule(name="other")
    now = timezone.now()
    rows = {
        "a": Attempt.objects.create(
            schedule=nightly,
            occurrence_at=now,
            status="dead_letter",
            error="ConnectionRefusedError: refused",
            worker="worker-1",
        ),
        "b": Attempt.objects.create(
            schedule=nightly,
            occurrence_at=now - timedelta(hours=1),
            status="succeeded",
            worker="worker-7",
        ),
        "c": Attempt.objects.create(schedule=other, occurrence_at=now, status="succeeded"),
    }
    response = admin_client.get(reverse("admin:django_cadence_attempt_changelist"), {"q": query})
    shown = {row.pk for row in response.context["cl"].result_list}
    assert shown == {rows[key].pk for key in found}


def test_a_searched_list_takes_its_dates_from_all_attempts_not_a_scan(admin_client, make_schedule):
    schedule = make_schedule(name="nightly-import")
    Attempt.objects.create(schedule=schedule, occurrence_at=timezone.now(), status="succeeded")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(
            reverse("admin:django_cadence_attempt_changelist"), {"q": "nightly"}
        )
    assert response.status_code == 200
    spans = [q["sql"] for q in queries.captured_queries if "MIN(" in q["sql"].upper()]
    assert spans
    assert all("LIKE" not in sql.upper() for sql in spans)


@pytest.mark.parametrize("cap", [10_000, 1], ids=["few-matches", "many-matches"])
def test_attempts_search_joins_no_schedule_and_keeps_every_term(
    admin_client, make_schedule, monkeypatch, cap
):
    """Names are matched through a subquery (no join MariaDB would plan from the schedules'
    side); every term must match; a quoted phrase is one term; past the cap of collected
    matches the list is the filtered query itself."""
    monkeypatch.setattr(attempts_admin, "COUNT_CAP", cap)
    nightly = make_schedule(name="nightly-import")
    now = timezone.now()
    both = Attempt.objects.create(
        schedule=nightly, occurrence_at=now, status="dead_letter", worker="w-7 on host a"
    )
    Attempt.objects.create(
        schedule=nightly, occurrence_at=now - timedelta(hours=1), status="dead_letter", worker="x"
    )
    Attempt.objects.create(
        schedule=make_schedule(name="other"),
        occurrence_at=now,
        status="dead_letter",
        worker="w-9 on host a",
    )
    url = reverse("admin:django_cadence_attempt_changelist")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(url, {"q": 'nightly "on host a"'})
    assert [row.pk for row in response.context["cl"].result_list] == [both.pk]
    searched = [q["sql"] for q in queries.captured_queries if "LIKE" in q["sql"].upper()]
    assert searched
    assert all("JOIN" not in sql.upper() for sql in searched)
    dead = admin_client.get(reverse("admin:django_cadence_deadletter_changelist"), {"q": "w-7"})
    assert [row.pk for row in dead.context["cl"].result_list] == [both.pk]


def _fieldsets(html):
    """(fieldset title, [field labels]) of an admin change page, in order."""
    found = []
    for block in re.findall(r"<fieldset.*?</fieldset>", html, flags=re.S):
        title = re.search(r"<h2[^>]*>(.*?)</h2>", block, flags=re.S)
        labels = re.findall(r"<label>(.*?):</label>", block)
        found.append((title.group(1).strip() if title else None, labels))
    return found


def test_after_retry_the_page_labels_the_old_start_worker_and_error_as_the_last_trys(
    admin_client, three
):
    """A dead letter retried by its page's button: pending, with a fresh set of tries. What
    the attempt still holds of its tries is shown as the last try's, not as its own."""
    dead = three["deadletter"]
    response = admin_client.post(
        reverse("admin:django_cadence_attempt_do", args=[dead.pk, "retry"])
    )
    assert response.status_code == 302
    assert Attempt.objects.get(pk=dead.pk).status == "pending"

    html = admin_client.get(change("attempt", dead)).content.decode()
    sets = dict(_fieldsets(html))
    assert sets["Timing"] == ["Retry at"]
    assert sets["The last try"] == [
        "Last try started",
        "Last try&#x27;s worker",
        "Last try&#x27;s error",
    ]
    assert "Worker and lease" not in sets
    assert "Result" not in sets
    assert "An earlier try's, not the next one's" in html
    assert "RuntimeError: second failure" in html  # kept, under its label
    assert "host-b:456" in html


def test_a_running_retry_shows_its_own_start_and_worker_and_the_last_trys_error(
    admin_client, three
):
    retry = three["retry"]
    Attempt.objects.filter(pk=retry.pk).update(
        status="running",
        tries=2,
        claim_token="t",
        started_at=T0 + timedelta(hours=2),
        lease_until=T0 + timedelta(hours=3),
        worker="host-c:789",
    )
    sets = dict(_fieldsets(admin_client.get(change("attempt", retry)).content.decode()))
    assert sets["Timing"] == ["Started"]
    assert sets["Worker and lease"][0] == "Worker"
    assert sets["The last try"] == ["Last try&#x27;s error"]


def test_a_finished_attempt_shows_its_own_timing_worker_and_error(admin_client, three):
    sets = dict(
        _fieldsets(admin_client.get(change("attempt", three["deadletter"])).content.decode())
    )
    assert sets["Timing"] == ["Started", "Finished", "Took"]
    assert sets["Result"] == ["Error"]
    assert "The last try" not in sets
