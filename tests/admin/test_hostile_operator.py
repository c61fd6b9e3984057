"""A view-only operator walks every page the admin serves and never retrieves a secret; a
staff user without Cadence rights gets 403 everywhere and changes nothing.

Every field a job or an operator can fill holds a planted secret in a form the redaction
catches (a secret-looking key, ``password=...`` in text); the claim token, never shown at
all, is planted too. The URLs are not listed by hand: they are read from the admin site's
URL patterns of every model of the app, so a page added later is walked as well.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.urls import URLPattern, reverse

from django_cadence.admin import operations
from django_cadence.admin.guard import GuardedAdmin
from django_cadence.models import Attempt, Schedule, Worker

T0 = datetime(2026, 1, 1, tzinfo=UTC)
APP = "django_cadence"

PAYLOAD_SECRET = "pl-SECRET-4711"
METADATA_SECRET = "md-SECRET-4712"
ERROR_SECRET = "hunter2-SECRET"
OUTCOME_SECRET = "oc-SECRET-4713"
HISTORY_SECRET = "hi-SECRET-4714"
PAUSE_SECRET = "pr-SECRET-4715"
CLAIM_TOKEN = "c1a1m70ken5ecret0000000000000000"
SECRETS = (
    PAYLOAD_SECRET,
    METADATA_SECRET,
    ERROR_SECRET,
    OUTCOME_SECRET,
    HISTORY_SECRET,
    PAUSE_SECRET,
    CLAIM_TOKEN,
)
ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/jobs.py", line 3, in sync\n'
    f"    connect(password={ERROR_SECRET!r})\n"
    f"RuntimeError: login refused password={ERROR_SECRET}"
)
VIEW_ONLY = ("view_schedule", "view_attempt", "view_deadletter", "view_retry", "view_worker")


@pytest.fixture
def planted(make_schedule):
    """Schedules and attempts (one of each status an operator meets) with secrets in every
    field, a worker, and a history entry of a discarded dead letter."""
    common = {"payload": {"password": PAYLOAD_SECRET, "note": "ok"}}
    metadata = {"api_key": METADATA_SECRET, "team": "billing"}
    schedule = make_schedule(name="sync", metadata=metadata, **common)
    paused = make_schedule(name="paused-sync", enabled=False, metadata=metadata, **common)
    Schedule.objects.filter(pk=paused.pk).update(pause_reason=f"paused: secret={PAUSE_SECRET}")
    history = [
        {
            "try": 1,
            "worker": "w-1",
            "started_at": T0.isoformat(),
            "finished_at": T0.isoformat(),
            "result": "failed",
            "error": f"ValueError: token={HISTORY_SECRET}",
        }
    ]
    rows = {}
    for n, (status, extra) in enumerate(
        [
            ("dead_letter", {}),
            ("pending", {"retry_at": T0 + timedelta(days=1)}),
            ("running", {"claim_token": CLAIM_TOKEN, "lease_until": T0, "worker": "w-1"}),
            ("succeeded", {"outcome": {"token": OUTCOME_SECRET, "rows": 3}}),
        ]
    ):
        rows[status] = Attempt.objects.create(
            schedule=schedule,
            occurrence_at=T0 + timedelta(hours=n),
            status=status,
            tries=1,
            error=ERROR,
            history=history,
            **extra,
        )
    discarded = Attempt.objects.create(
        schedule=schedule, occurrence_at=T0 - timedelta(days=1), status="dead_letter", error=ERROR
    )
    superuser = User.objects.create_superuser("root", "root@example.com", None)
    request = type("Request", (), {"user": superuser})()
    operations.discard_dead_letters(request, [discarded.pk])
    LogEntry.objects.create(
        user=superuser,
        content_type_id=LogEntry.objects.get().content_type_id,
        object_id=str(rows["dead_letter"].pk),
        object_repr=str(rows["dead_letter"]),
        action_flag=2,
        change_message="Retried the dead letter.",
    )
    worker = Worker.objects.create(
        worker_id="w-1", host="host-a", pid=42, started_at=T0, heartbeat_at=T0
    )
    return {"schedules": [schedule, paused], "attempts": rows, "worker": worker}


def objects_of(model_admin) -> list[int]:
    """The primary keys of the existing rows this admin's object pages are for (a proxy's
    manager keeps only its own: dead letters, retries)."""
    return list(model_admin.model._default_manager.order_by("pk").values_list("pk", flat=True))


def admin_urls(planted) -> list[str]:
    """Every URL the admin site registers for the app's models, filled in with every object,
    every object action, and the site's own pages that list the app."""
    urls = [reverse("admin:index"), reverse("admin:app_list", args=[APP])]
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != APP:
            continue
        prefix = f"{reverse('admin:index')}{APP}/{model._meta.model_name}/"
        for pattern in model_admin.get_urls():
            assert isinstance(pattern, URLPattern)
            route = str(pattern.pattern)
            pks = objects_of(model_admin) if "<path:object_id>" in route else [None]
            names = [a.name for a in getattr(model_admin, "object_actions", ())]
            actions = names if "<slug:action>" in route else [None]
            for pk in pks:
                for action in actions:
                    path = route.replace("<path:object_id>", str(pk))
                    urls.append(prefix + path.replace("<slug:action>", str(action)))
    urls += [
        reverse("admin:django_cadence_schedule_preview")
        + f"?object_id={planted['schedules'][0].pk}&kind=interval&interval=60",
        reverse("admin:autocomplete")
        + f"?app_label={APP}&model_name=attempt&field_name=schedule&term=",
        reverse("admin:autocomplete")
        + f"?app_label={APP}&model_name=attempt&field_name=schedule&term={METADATA_SECRET}",
        reverse("admin:django_cadence_attempt_changelist") + "?_popup=1",
        reverse("admin:django_cadence_schedule_changelist") + "?_popup=1&_to_field=id",
    ]
    return urls


def assert_no_secret(response, url):
    body = response.content.decode()
    for secret in SECRETS:
        assert secret not in body, f"{secret} shown by {url}"


def test_hostile_view_only_operator_walks_every_admin_url_and_sees_no_secret(operator, planted):
    viewer = operator(*VIEW_ONLY)
    urls = admin_urls(planted)
    assert len(urls) > 40
    statuses = {}
    for url in urls:
        response = viewer.get(url)
        assert response.status_code in (200, 302, 403, 404, 405), url
        assert_no_secret(response, url)
        statuses[url] = response.status_code
    change = {u: s for u, s in statuses.items() if u.endswith("/change/")}
    history = {u: s for u, s in statuses.items() if u.endswith("/history/")}
    assert change
    assert set(change.values()) == {200}  # every object page is served, redacted
    assert history
    assert set(history.values()) == {200}
    assert "********" in viewer.get(next(iter(change))).content.decode()
    for model in ("attempt", "deadletter", "retry", "worker", "schedule"):
        assert statuses[reverse(f"admin:{APP}_{model}_add")] == 403
    previews = [s for u, s in statuses.items() if "/preview/" in u]
    assert previews == [403, 403]  # the preview is for editing: with and without an object


def test_hostile_every_cadence_admin_is_guarded():
    """A ModelAdmin added later gets the same narrow lookups, bounded search and 403s."""
    registered = [ma for m, ma in admin.site._registry.items() if m._meta.app_label == APP]
    assert len(registered) == 8  # CalendarAdmin among them
    assert all(isinstance(model_admin, GuardedAdmin) for model_admin in registered)


def test_hostile_view_only_operator_reads_payload_and_metadata_redacted(operator, planted):
    viewer = operator(*VIEW_ONLY)
    schedule = planted["schedules"][1]
    html = viewer.get(reverse("admin:django_cadence_schedule_change", args=[schedule.pk]))
    html = html.content.decode()
    assert "&quot;password&quot;: &quot;********&quot;" in html
    assert "&quot;api_key&quot;: &quot;********&quot;" in html
    assert "&quot;team&quot;: &quot;billing&quot;" in html
    assert "secret=********" in html


def test_hostile_overview_serves_no_object_page(operator, planted):
    """The overview proxy's default object pages would show an attempt raw: not served."""
    viewer = operator(*VIEW_ONLY)
    pk = planted["attempts"]["running"].pk
    base = f"{reverse('admin:django_cadence_overview_changelist')}{pk}"
    for suffix in ("/change/", "/history/", "/delete/", "/"):
        assert viewer.get(base + suffix).status_code == 404
    assert viewer.get(reverse("admin:django_cadence_overview_changelist")).status_code == 200


PROBES = {
    "schedule": [
        "payload__password__startswith",
        "payload__icontains",
        "metadata__api_key__startswith",
        "metadata__icontains",
        "pause_reason__contains",
        "name__startswith",
    ],
    "attempt": [
        "error__contains",
        "error__startswith",
        "outcome__token__startswith",
        "outcome__icontains",
        "history__0__error__contains",
        "history__icontains",
        "claim_token__startswith",
        "payload__icontains",
        "schedule__payload__icontains",
        "schedule__metadata__api_key__startswith",
        "schedule__pause_reason__contains",
        "status__startswith",
    ],
    "worker": ["worker_id__startswith", "host__contains", "session_lock__exact"],
}
PROBES["deadletter"] = PROBES["retry"] = PROBES["attempt"]
PROBED = [(page, lookup) for page, lookups in PROBES.items() for lookup in lookups]


@pytest.mark.parametrize(("page", "lookup"), PROBED, ids=[f"{p}-{lk}" for p, lk in PROBED])
def test_hostile_lookup_on_stored_data_is_refused(operator, planted, page, lookup):
    viewer = operator(*VIEW_ONLY)
    url = reverse(f"admin:{APP}_{page}_changelist")
    response = viewer.get(url, {lookup: "h"})
    # Refused as Django refuses a disallowed lookup: a 400, no rows and no count.
    assert response.status_code == 400
    assert_no_secret(response, url)


ALLOWED = {
    "schedule": [
        "kind__exact=interval",
        "enabled__exact=1",
        "overlap__exact=allow",
        "last_outcome=succeeded",
        "o=1",
        "p=1",
        "q=sync",
    ],
    "attempt": [
        "status__exact=dead_letter",
        "schedule__id__exact=1",
        "schedule__isnull=False",
        "trigger__exact=manual",
        (
            "occurrence_at__gte=2026-01-01+00%3A00%3A00%2B00%3A00"
            "&occurrence_at__lt=2026-01-02+00%3A00%3A00%2B00%3A00"
        ),
        "occurrence_at__year=2026&occurrence_at__month=1&occurrence_at__day=1",
        "o=1",
        "q=sync",
        "_popup=1",
    ],
    "deadletter": ["schedule__id__exact=1", "occurrence_at__year=2026", "trigger__exact=manual"],
    "retry": ["schedule__id__exact=1", "occurrence_at__year=2026&occurrence_at__month=1"],
    "worker": ["state=live", "state=all", "host=host-a", "host__isnull=True", "q=w-1"],
}
ALLOWED_CASES = [(page, query) for page, queries in ALLOWED.items() for query in queries]


@pytest.mark.parametrize(("page", "query"), ALLOWED_CASES, ids=[q for _p, q in ALLOWED_CASES])
def test_hostile_the_pages_own_filters_still_work(operator, planted, page, query):
    viewer = operator(*VIEW_ONLY)
    response = viewer.get(f"{reverse(f'admin:{APP}_{page}_changelist')}?{query}")
    assert response.status_code == 200
    assert_no_secret(response, query)


SEARCHES = [
    ("schedule", PAYLOAD_SECRET),
    ("schedule", METADATA_SECRET),
    ("schedule", PAUSE_SECRET),
    ("attempt", ERROR_SECRET),
    ("attempt", "hunter2"),
    ("attempt", HISTORY_SECRET),
    ("attempt", OUTCOME_SECRET),
    ("attempt", CLAIM_TOKEN),
    ("deadletter", ERROR_SECRET),
    ("retry", ERROR_SECRET),
]


@pytest.mark.parametrize(("page", "term"), SEARCHES, ids=[f"{p}-{t}" for p, t in SEARCHES])
def test_hostile_search_finds_nothing_by_a_redacted_value(operator, planted, page, term):
    viewer = operator(*VIEW_ONLY)
    response = viewer.get(reverse(f"admin:{APP}_{page}_changelist"), {"q": term})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []


def test_hostile_search_finds_what_is_shown(operator, planted):
    """Metadata as shown is searchable (a team), and so is a key's name; only values hidden
    by redaction are not."""
    viewer = operator(*VIEW_ONLY)
    url = reverse(f"admin:{APP}_schedule_changelist")
    for term in ("billing", "api_key", '"team": "billing"', "sync"):
        shown = {s.name for s in viewer.get(url, {"q": term}).context["cl"].result_list}
        assert shown == {"sync", "paused-sync"}, term


def test_hostile_autocomplete_finds_nothing_by_a_redacted_value(operator, planted):
    viewer = operator(*VIEW_ONLY)
    url = reverse("admin:autocomplete")
    params = {"app_label": APP, "model_name": "attempt", "field_name": "schedule"}
    assert viewer.get(url, {**params, "term": METADATA_SECRET}).json()["results"] == []
    found = viewer.get(url, {**params, "term": "billing"}).json()["results"]
    assert {r["text"] for r in found} == {"sync", "paused-sync"}


def snapshot():
    """Everything an admin request could change."""
    return (
        list(Schedule.objects.order_by("pk").values()),
        list(Attempt.objects.order_by("pk").values()),
        list(Worker.objects.order_by("pk").values()),
        list(LogEntry.objects.order_by("pk").values()),
    )


def posts(planted) -> list[tuple[str, dict]]:
    """Every write a page offers: each bulk action, each object action (confirmed), the
    forms, the deletes."""
    writes: list[tuple[str, dict]] = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != APP:
            continue
        name = model._meta.model_name
        pks = objects_of(model_admin)
        if not pks:  # the overview: no rows of its own (and no object pages)
            pks = [planted["attempts"]["dead_letter"].pk]
        pk = pks[0]
        changelist = reverse(f"admin:{APP}_{name}_changelist")
        declared = [a if isinstance(a, str) else a.__name__ for a in model_admin.actions or ()]
        for action in [*declared, "delete_selected"]:
            for confirm in ({"index": "0"}, {"post": "yes"}):
                writes.append(
                    (changelist, {"action": action, "_selected_action": [str(pk)], **confirm})
                )
        for action in getattr(model_admin, "object_actions", ()):
            for target in pks:  # each object, so each action meets a state it applies to
                url = reverse(f"admin:{APP}_{name}_do", args=[target, action.name])
                writes.append((url, {"post": "yes"}))
        if name == "schedule":
            preview = reverse(f"admin:{APP}_schedule_preview")
            writes.append((preview, {"kind": "interval", "interval": "60"}))
            writes.append((reverse(f"admin:{APP}_{name}_add"), {"name": "x"}))
            writes.append((reverse(f"admin:{APP}_{name}_change", args=[pk]), {"name": "x"}))
            writes.append((reverse(f"admin:{APP}_{name}_delete", args=[pk]), {"post": "yes"}))
    return writes


@pytest.mark.parametrize("codenames", [VIEW_ONLY, ()], ids=["view-only", "no-cadence-rights"])
def test_hostile_writes_without_rights_are_403_and_change_nothing(operator, planted, codenames):
    user = operator(*codenames)
    before = snapshot()
    writes = posts(planted)
    assert len(writes) > 30
    for url, data in writes:
        response = user.post(url, data)
        assert response.status_code == 403, (url, data, response.status_code)
    assert snapshot() == before


def test_hostile_user_without_cadence_rights_gets_403_on_every_page(operator, planted):
    user = operator()
    urls = [u for u in admin_urls(planted) if u.rstrip("/") != reverse("admin:index").rstrip("/")]
    for url in urls:
        response = user.get(url)
        if url == reverse("admin:app_list", args=[APP]):
            assert response.status_code == 404  # Django: an app with nothing to show
            continue
        if response.status_code == 302:  # Django's old object URL, sent on to its page
            assert response["Location"] == f"{url}change/"
            continue
        assert response.status_code in (403, 405), (url, response.status_code)
        assert_no_secret(response, url)
    preview = reverse("admin:django_cadence_schedule_preview")
    assert user.get(preview, {"kind": "interval", "interval": "60"}).status_code == 403
