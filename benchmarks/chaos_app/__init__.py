"""The chaos harness's Django app: the jobs its workers run and the ``Effect`` rows they write."""
