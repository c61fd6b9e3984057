"""Celery tasks as a beat project has them, and what they were called with."""

from celery import shared_task

from .celery_app import app

calls: list[tuple[str, dict[str, object]]] = []


@shared_task
def send_report(recipient, urgent=False):
    calls.append(("send_report", {"recipient": recipient, "urgent": urgent}))


@shared_task
def ping():
    calls.append(("ping", {}))


@app.task(bind=True, max_retries=3)
def bound_export(self, table, limit=100):
    calls.append(
        ("bound_export", {"table": table, "limit": limit, "retries": self.request.retries})
    )


@app.task(name="reports.renamed")
def renamed(day):
    calls.append(("renamed", {"day": day}))


@shared_task
def takes_star_args(*values):
    calls.append(("takes_star_args", {"values": values}))


def plain_function(a, b=2):
    """A django-q2 schedule's function: any importable callable."""
    calls.append(("plain_function", {"a": a, "b": b}))


@app.task(bind=True)
def bound_with_context(self, table, context=None):
    calls.append(("bound_with_context", {"table": table, "try": context and context.try_number}))
