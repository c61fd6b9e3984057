"""The benchmark's Django app: the ``Firing`` table every job writes to, and the jobs."""
