"""The app's configuration: ``ready()`` only wires checks, signal receivers and ``jobs.py``."""

from django.apps import AppConfig


class CadenceConfig(AppConfig):
    """Wires checks and signal handlers and imports each installed app's ``jobs.py``."""

    name = "django_cadence"
    verbose_name = "Cadence"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from . import checks  # noqa: F401 - registers the system checks (checks.py)
        from .executors.registry import autodiscover
        from .signal_handlers import connect_default_receivers, schedule_saved

        post_save.connect(
            schedule_saved, sender=self.get_model("Schedule"), dispatch_uid="cadence-wakeup"
        )
        connect_default_receivers()
        autodiscover()
