from django.apps import AppConfig


class CadenceConfig(AppConfig):
    name = "django_cadence"
    verbose_name = "Cadence"
    default_auto_field = "django.db.models.BigAutoField"
