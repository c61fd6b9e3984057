import os

from django.apps import AppConfig


class BenchConfig(AppConfig):
    """Installs the SQL statement counter when ``CADENCE_BENCH_COUNT_QUERIES`` names a file,
    and the phase timers when ``CADENCE_BENCH_PHASES`` does."""

    name = "benchmarks.app"
    label = "bench"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        path = os.environ.get("CADENCE_BENCH_COUNT_QUERIES")
        if path:
            from . import querycount

            querycount.install(path)
        path = os.environ.get("CADENCE_BENCH_PHASES")
        if path:
            from . import phases

            phases.install(path)
