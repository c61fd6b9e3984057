"""The suite's settings with Cadence routed to a second database alias, ``cadence``.

``default`` keeps the project's own apps (auth, sessions, the admin's history); the router
sends every read, write and migration of django_cadence to ``cadence``. Used by
``make test-<database>`` (``--ds=tests.own_database.settings tests/own_database``), on two
SQLite files or two databases of the same server.
"""

from pathlib import Path

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES as _ONE


def _beside(name: str, engine: str) -> str:
    """The ``cadence`` database's name, derived from the default's: a file beside it on
    SQLite (``x.sqlite3`` → ``x-cadence.sqlite3``), ``<name>_cadence`` on a server."""
    if engine.endswith("sqlite3"):
        path = Path(name)
        return str(path.with_name(f"{path.stem}-cadence{path.suffix}"))
    return f"{name}_cadence"


_default = _ONE["default"]
_cadence = {**_default, "NAME": _beside(_default["NAME"], _default["ENGINE"])}
if "NAME" in _default.get("TEST", {}):
    _cadence["TEST"] = {
        **_default["TEST"],
        "NAME": _beside(_default["TEST"]["NAME"], _default["ENGINE"]),
    }

DATABASES = {"default": _default, "cadence": _cadence}
DATABASE_ROUTERS = ["tests.own_database.router.CadenceRouter"]
