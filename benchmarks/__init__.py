"""Benchmarks for django-cadence: lag, throughput and cost, against peer schedulers.

Run ``python -m benchmarks --help``. Nothing here is imported by the package or its tests.
"""
