"""Every ``CADENCE_*`` setting, its default and its accepted values.

Each setting is parsed once and cached; Django's ``setting_changed`` signal (sent by
``override_settings`` and pytest-django's ``settings`` fixture) drops the cache, so tests
that change a setting see the new value. The engine reads settings on every try: parsing
them each time was a measurable part of its cost. A malformed value raises
``ImproperlyConfigured`` naming the setting and what it accepts; the system checks call
:func:`validate_all` so the same message shows at start-up.

``table`` lists the settings, ``readers`` checks one value, ``notify`` reads
``CADENCE_NOTIFY``, ``declared`` the outline of the schedules and calendars declared in
settings, and ``settings`` holds the object the rest of the package reads.
"""

from .notify import CHANNEL_TYPES, NOTIFY_EVENTS, Channel, NotifySettings
from .settings import CadenceSettings, cadence_settings
from .table import DEFAULT_SECRET_KEYS, setting_default, setting_names, validate_all

__all__ = [
    "CHANNEL_TYPES",
    "DEFAULT_SECRET_KEYS",
    "NOTIFY_EVENTS",
    "CadenceSettings",
    "Channel",
    "NotifySettings",
    "cadence_settings",
    "setting_default",
    "setting_names",
    "validate_all",
]
