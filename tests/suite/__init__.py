"""The test suite's own machinery (``tests/conftest.py``), tested."""
