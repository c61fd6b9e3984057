"""The settings object, :data:`cadence_settings`: typed, each setting parsed once and cached."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from .notify import NotifySettings
from .table import DEFAULT_SECRET_KEYS, SETTINGS


class CadenceSettings:
    """Typed access to the ``CADENCE_*`` settings; one property per setting."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def _get(self, name: str) -> Any:
        try:
            return self._cache[name]
        except KeyError:
            pass
        setting = SETTINGS[name]
        value = setting.parse(name, getattr(django_settings, name, setting.default))
        self._cache[name] = value
        return value

    def clear_cache(self) -> None:
        self._cache.clear()

    @property
    def EXECUTORS(self) -> tuple[str, ...]:  # noqa: N802 - mirrors the setting name
        return self._get("CADENCE_EXECUTORS")

    @property
    def PAYLOAD_MAX_BYTES(self) -> int:  # noqa: N802
        return self._get("CADENCE_PAYLOAD_MAX_BYTES")

    @property
    def SECRET_KEYS(self) -> tuple[str, ...]:  # noqa: N802
        """The built-in names and those of ``CADENCE_SECRET_KEYS``, lower-cased, once each
        (cached with the settings: every log line asks)."""
        merged = self._cache.get("SECRET_KEYS")
        if merged is None:
            names = (*DEFAULT_SECRET_KEYS, *self._get("CADENCE_SECRET_KEYS"))
            merged = tuple(dict.fromkeys(name.strip().lower() for name in names))
            self._cache["SECRET_KEYS"] = merged
        return merged

    @property
    def MIN_INTERVAL(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MIN_INTERVAL")

    @property
    def MISFIRE_GRACE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MISFIRE_GRACE")

    @property
    def MAX_CATCHUP(self) -> int:  # noqa: N802
        return self._get("CADENCE_MAX_CATCHUP")

    @property
    def MAX_ATTEMPTS(self) -> int:  # noqa: N802
        return self._get("CADENCE_MAX_ATTEMPTS")

    @property
    def RETRY_BASE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_RETRY_BASE")

    @property
    def RETRY_CAP(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_RETRY_CAP")

    @property
    def MAX_RUNTIME(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MAX_RUNTIME")

    @property
    def LEASE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_LEASE")

    @property
    def RECOVERY_GRACE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_RECOVERY_GRACE")

    @property
    def MAX_RECOVERIES(self) -> int:  # noqa: N802
        return self._get("CADENCE_MAX_RECOVERIES")

    @property
    def SESSION_LIVENESS(self) -> bool:  # noqa: N802
        return self._get("CADENCE_SESSION_LIVENESS")

    @property
    def CONCURRENCY(self) -> int | None:  # noqa: N802
        """None: the database's default (``Store.default_concurrency``)."""
        return self._get("CADENCE_CONCURRENCY")

    @property
    def MAX_TICK(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_MAX_TICK")

    @property
    def SHUTDOWN_GRACE(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_SHUTDOWN_GRACE")

    @property
    def PLAN_BATCH(self) -> int:  # noqa: N802
        return self._get("CADENCE_PLAN_BATCH")

    @property
    def CLAIM_AHEAD(self) -> timedelta:  # noqa: N802
        return self._get("CADENCE_CLAIM_AHEAD")

    @property
    def STUCK_THREADS_LIMIT(self) -> int:  # noqa: N802
        return self._get("CADENCE_STUCK_THREADS_LIMIT")

    @property
    def SCHEDULES(self) -> dict[str, Any]:  # noqa: N802
        return self._get("CADENCE_SCHEDULES")

    @property
    def CALENDARS(self) -> dict[str, Any]:  # noqa: N802
        return self._get("CADENCE_CALENDARS")

    @property
    def RECONCILE_ON_START(self) -> bool:  # noqa: N802
        return self._get("CADENCE_RECONCILE_ON_START")

    @property
    def TASKS(self) -> tuple[str, ...]:  # noqa: N802
        return self._get("CADENCE_TASKS")

    @property
    def METRICS(self) -> bool:  # noqa: N802
        return self._get("CADENCE_METRICS")

    @property
    def METRICS_PORT(self) -> int | None:  # noqa: N802
        return self._get("CADENCE_METRICS_PORT")

    @property
    def METRICS_ADDRESS(self) -> str:  # noqa: N802
        """Where ``run_cadence`` listens for scrapes: the loopback interface unless set."""
        return self._get("CADENCE_METRICS_ADDRESS")

    @property
    def NOTIFY(self) -> NotifySettings:  # noqa: N802
        return self._get("CADENCE_NOTIFY")


cadence_settings = CadenceSettings()


@receiver(setting_changed)
def _drop_cached_settings(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("CADENCE_"):
        cadence_settings.clear_cache()
