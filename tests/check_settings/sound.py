"""The test settings on SQLite, as they are: no check has anything to say."""

from tests.settings import *  # noqa: F403
