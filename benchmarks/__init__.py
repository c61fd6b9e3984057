"""Benchmarks for django-cadence: lag, throughput and cost, against peer schedulers.

Run ``python -m benchmarks --help``. Nothing here is imported by the package; the tests
import the fleet code they share with the chaos harness (``benchmarks.fleet``) and run it.
"""
