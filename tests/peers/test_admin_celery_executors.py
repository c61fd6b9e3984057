"""After the switch from Celery beat, staff pick a Celery task in the admin: the pattern
``"tests.peers.tasks.*"`` (tests/peers/settings.py) offers the tasks that module defines,
``@shared_task`` and ``@app.task`` alike, and none it only imports."""

import re

from django.urls import reverse

from django_cadence.models import Schedule

ADD = reverse("admin:django_cadence_schedule_add")
GROUP = "Allowed by CADENCE_EXECUTORS &#x27;tests.peers.tasks.*&#x27;"


def offered(html):
    select = re.search(r'<select name="executor".*?</select>', html, re.DOTALL)
    groups = dict(re.findall(r'<optgroup label="([^"]*)">(.*?)</optgroup>', select[0], re.S))
    return re.findall(r'<option value="([^"]*)"', groups[GROUP])


def test_admin_offers_the_celery_tasks_a_pattern_allows(admin_client):
    values = offered(admin_client.get(ADD).content.decode())
    assert {
        "tests.peers.tasks.send_report",
        "tests.peers.tasks.ping",
        "tests.peers.tasks.bound_export",
        "tests.peers.tasks.renamed",
        "tests.peers.tasks.plain_function",
    } <= set(values)
    assert "tests.peers.tasks.app" not in values  # the Celery app is not a task
    assert "tests.peers.tasks.shared_task" not in values  # imported from celery


def test_admin_saves_a_schedule_for_a_celery_task(admin_client):
    data = {
        "name": "weekday-report",
        "enabled": "on",
        "queue": "default",
        "executor": "tests.peers.tasks.send_report",
        "payload": '{"recipient": "ops@example.com"}',
        "kind": "cron",
        "cron": "0 */3 * * mon-fri",
        "timezone": "Europe/Paris",
        "overlap": "skip_if_running",
        "misfire": "fire_once",
        "jitter": "0",
    }
    response = admin_client.post(ADD, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Schedule.objects.get().executor == "tests.peers.tasks.send_report"
