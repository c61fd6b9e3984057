"""The test settings with ``CADENCE_EXECUTORS`` entries that name nothing: a mistyped module
under a pattern and as an exact path (django_cadence.W003), and an exact path whose module has
no such function, or names a class (django_cadence.W004)."""

from tests.settings import *  # noqa: F403

CADENCE_EXECUTORS = [
    "tests.jobs.*",
    "tests.jbos.*",
    "tests.jbos.send",
    "tests.jobs.does_not_exist",
    "tests.jobs.echoo",
    "tests.jobs.BadRepr",
]
