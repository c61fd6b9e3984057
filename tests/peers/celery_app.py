"""The Celery app of the peers' project, configured from Django settings as projects do."""

from celery import Celery

app = Celery("peers")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.set_current()
