"""A test app whose ``ready()`` connects receivers that raise to the cadence signals, as a
notifier that times out would; installed in ``run_cadence`` children through
``CADENCE_TEST_EXTRA_APPS`` (tests/settings.py) by tests/fleet/test_hostile_jobs.py."""
