"""Procrastinate 3: PostgreSQL task queue; periodic tasks and deferred jobs, one worker.

Runner: ``run_procrastinate.py`` (its docstring has the configuration): one worker process
with ``concurrency=C``, its periodic deferrer, LISTEN/NOTIFY, job polling every 0.5 s.
"""

from .base import Peer


class Procrastinate(Peer):
    name = "procrastinate"
    requirements = ("procrastinate>=3,<4", "psycopg[binary,pool]>=3.1")
    script = "run_procrastinate.py"
