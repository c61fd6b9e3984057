"""Settings of the chaos harness's workers: the test suite's, plus ``DEBUG`` on demand.

The workers need the ``tests`` app (its ``Effect`` model) and the ``tests.jobs`` executors,
so this is ``tests.settings`` (database from ``CADENCE_TEST_DB`` and ``CADENCE_*_NAME``,
``CADENCE_TEST_OVERRIDES`` for shrunken leases) with one addition: ``CADENCE_CHAOS_DEBUG=1``
turns ``DEBUG`` on, as the soak run needs (Django then keeps every query it runs).
"""

import os

from tests.settings import *  # noqa: F403

DEBUG = os.environ.get("CADENCE_CHAOS_DEBUG") == "1"
