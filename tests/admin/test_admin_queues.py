"""Queues in the admin: a column and a filter on the schedules, a field on the form, and the
queues each worker serves on the workers page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from django_cadence.models import Schedule, Worker

from .test_admin_schedules import form_data

pytestmark = pytest.mark.django_db

SCHEDULES = reverse("admin:django_cadence_schedule_changelist")
WORKERS = reverse("admin:django_cadence_worker_changelist")


def test_the_schedule_list_shows_and_filters_by_queue(admin_client, make_schedule):
    make_schedule(name="invoices", queue="billing")
    make_schedule(name="totals", queue="reports")
    response = admin_client.get(SCHEDULES)
    assert response.context["cl"].list_display[3] == "queue"
    assert "?queue=billing" in response.content.decode()
    response = admin_client.get(SCHEDULES, {"queue": "reports"})
    assert [s.name for s in response.context["cl"].result_list] == ["totals"]


def test_the_form_sets_the_queue_and_refuses_a_bad_one(admin_client):
    add = reverse("admin:django_cadence_schedule_add")
    response = admin_client.post(add, form_data(name="exports", queue="bad name"))
    assert response.status_code == 200
    (message,) = response.context["adminform"].form.errors["queue"]
    assert "starts with a letter or digit" in message
    assert not Schedule.objects.filter(name="exports").exists()
    response = admin_client.post(add, form_data(name="exports", queue="reports"))
    assert response.status_code == 302
    assert Schedule.objects.get(name="exports").queue == "reports"


def test_the_workers_page_shows_the_queues_each_serves(admin_client):
    now = timezone.now()
    for worker_id, queues in (("w-reports", "reports"), ("w-all", "")):
        Worker.objects.create(
            worker_id=worker_id, host="h", pid=1, started_at=now, heartbeat_at=now, queues=queues
        )
    page = admin_client.get(WORKERS).content.decode()
    assert ">reports<" in page
    assert "every queue" in page


def test_the_overview_shows_each_queues_work_and_who_serves_it(admin_client, make_schedule):
    from django_cadence.models import Attempt

    now = timezone.now()
    waiting = make_schedule(name="totals", queue="reports")
    Attempt.objects.create(
        schedule=waiting, occurrence_at=now, status="pending", retry_at=now - timedelta(minutes=2)
    )
    make_schedule(name="invoices", queue="billing")
    Worker.objects.create(
        worker_id="w-billing", host="h", pid=1, started_at=now, heartbeat_at=now, queues="billing"
    )
    page = admin_client.get(reverse("admin:django_cadence_overview_changelist")).content.decode()
    assert "<h2>Queues</h2>" in page
    assert "<td>billing</td><td>0</td><td>-</td><td>1</td>" in page
    assert '<tr class="cadence-lost"><td>reports</td><td>1</td><td>2 min' in page
    assert "0 (nobody serves it)" in page
