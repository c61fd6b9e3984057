"""Helpers the tests share, one module per kind: what the workers recorded
(``records``), the attempts a test waits for (``attempts``) and commands run as a user
runs them, in a fresh interpreter (``commands``). Fixtures stay in the ``conftest.py``
nearest the tests that use them; the workers themselves come from ``benchmarks.fleet``.
"""
