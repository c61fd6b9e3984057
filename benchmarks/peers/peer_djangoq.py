"""django-q2: ORM broker on PostgreSQL, ``qcluster`` with C worker processes; W1 only.

Runner: ``run_djangoq.py`` (its docstring has the configuration). Its scheduler runs about
every 30 s and schedules have minute resolution, so 1-second intervals (W2, W3) cannot be
expressed and are reported as not supported.
"""

from .base import Peer

_WHY = (
    "django-q2 schedules have a minimum period of one minute and its cluster runs the "
    "scheduler about every 30 s; 1-second intervals cannot be expressed"
)


class DjangoQ(Peer):
    name = "django-q2"
    requirements = ("Django>=5.2,<6", "django-q2>=1.7", "psycopg[binary]>=3.1")
    script = "run_djangoq.py"
    unsupported = {"W2": _WHY, "W3": _WHY}

    @classmethod
    def venv(cls):
        from .base import VENVS

        return VENVS / "djangoq"
