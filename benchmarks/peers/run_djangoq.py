"""django-q2 runner: a ``qcluster`` with the ORM broker on PostgreSQL.

Configuration: Django settings made in-process (``django_q`` app, database
``cadence_bench``), ``Q_CLUSTER = {"name": "bench", "orm": "default", "workers": C,
"timeout": 60, "retry": 120, "poll": 0.2, "catch_up": False}``. One-shots are
``Schedule(schedule_type=ONCE, next_run=due)`` rows whose kwargs carry the due instant; idle
schedules are ONCE rows a day ahead. django-q2's cluster runs its scheduler about every
30 s (a counter in the sentinel's guard loop), and its schedules have a minimum period of a
minute, so it cannot express 1-second interval schedules: W2 and W3 are "not supported".
"""

from __future__ import annotations

from datetime import timedelta

import django
from django.conf import settings

from benchmarks.peers import _runner

CONFIG = _runner.load_config()

settings.configure(
    SECRET_KEY="bench",
    USE_TZ=True,
    TIME_ZONE="UTC",
    INSTALLED_APPS=["django.contrib.contenttypes", "django_q"],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "cadence_bench",
            "USER": "postgres",
            "HOST": "127.0.0.1",
            "PORT": "5432",
        }
    },
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    Q_CLUSTER={
        "name": "bench",
        "orm": "default",
        "workers": CONFIG["concurrency"],
        "timeout": 60,
        "retry": 120,
        "poll": 0.2,
        "catch_up": False,
    },
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django_q.models import Schedule  # noqa: E402


def main() -> None:
    call_command("migrate", verbosity=0)
    func = "benchmarks.peers.djq_tasks." + CONFIG["spec"].get("job", "record")
    now = _runner.utcnow()
    idle = [g for g in CONFIG["spec"]["groups"] if g.get("offset", 0) >= 3600]
    rows = [
        Schedule(
            name=name,
            func=func,
            kwargs={"name": name, "due": (now + timedelta(days=1)).isoformat()},
            schedule_type=Schedule.ONCE,
            next_run=now + timedelta(days=1),
        )
        for name, _, _ in _runner.schedules({"groups": idle}, now)
    ]
    Schedule.objects.bulk_create(rows, batch_size=5000)
    t0 = _runner.pick_t0(CONFIG)
    ones = [g for g in CONFIG["spec"]["groups"] if g["kind"] == "once"]
    for name, _, at in _runner.schedules({"groups": ones}, t0):
        Schedule.objects.create(
            name=name,
            func=func,
            kwargs={"name": name, "due": at.isoformat()},
            schedule_type=Schedule.ONCE,
            next_run=at,
        )
    _runner.announce_ready(CONFIG, t0)
    call_command("qcluster")


if __name__ == "__main__":
    main()
