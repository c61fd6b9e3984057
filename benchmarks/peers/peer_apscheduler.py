"""APScheduler 3.x: in-process BackgroundScheduler, SQLAlchemy job store on PostgreSQL.

Runner: ``run_apscheduler.py`` (its docstring has the full configuration). One process,
job store table ``apscheduler_jobs`` in ``cadence_bench``, a thread pool of
``--concurrency`` threads, ``misfire_grace_time=60``, ``coalesce=False``. APScheduler 3 runs
one scheduler per job store: it has no multi-process coordination, so it is one process
here.
"""

from .base import Peer


class APScheduler(Peer):
    name = "apscheduler"
    requirements = ("APScheduler>=3.10,<4", "SQLAlchemy>=2", "psycopg[binary]>=3.1")
    script = "run_apscheduler.py"
