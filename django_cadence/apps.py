from django.apps import AppConfig


class CadenceConfig(AppConfig):
    """Wires checks and imports each installed app's ``jobs.py``; nothing else at start-up."""

    name = "django_cadence"
    verbose_name = "Cadence"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the system checks
        from .executors import autodiscover

        autodiscover()
