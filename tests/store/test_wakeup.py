"""A schedule saved elsewhere wakes engines at once on PostgreSQL (LISTEN/NOTIFY)."""

import threading
from datetime import timedelta

import pytest
from django.db import connection

from django_cadence import store


@pytest.mark.django_db(transaction=True)
def test_wakeup_saving_a_schedule_wakes_listening_engines(make_schedule):
    woken = threading.Event()
    listener = store.of().start_listener(woken.set)
    if connection.vendor != "postgresql":
        # Other backends have no notifications: engines rely on the bounded tick.
        assert listener is None
        return
    try:
        # Wait until LISTEN is in place: an unrelated notification proves it.
        for _ in range(50):
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify('django_cadence', '')")
            if woken.wait(0.1):
                break
        assert woken.is_set(), "the listener never started listening"
        woken.clear()
        make_schedule(interval=timedelta(minutes=5))
        assert woken.wait(5), "saving a schedule did not wake the listener"
    finally:
        listener.stop()
        listener.join(5)
