"""``@job`` in a module no ``jobs.py`` imports: never registered."""

from django_cadence import job


@job
def nightly_report() -> str:
    return "report"
