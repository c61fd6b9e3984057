"""The settings an attempt of a schedule runs under: the schedule's field, else its job's
option (``@job``), else the ``CADENCE_*`` setting.

The engine resolves them once per claim; the overdue reading (``models/overdue.py``) reads
the same retry settings to know how long a failing occurrence's retries may wait.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol

from ..conf import cadence_settings
from ..executors import allow_list
from ..executors import registry as executors


class ScheduleOptions(Protocol):
    """The schedule fields :func:`resolved_options` reads (a ``Schedule`` has them)."""

    @property
    def executor(self) -> str: ...
    @property
    def max_attempts(self) -> int | None: ...
    @property
    def retry_base(self) -> timedelta | None: ...
    @property
    def retry_cap(self) -> timedelta | None: ...
    @property
    def max_runtime(self) -> timedelta | None: ...


def resolved_options(
    schedule: ScheduleOptions, jobs: dict[str, executors.JobOptions] | None = None
) -> dict[str, Any]:
    """Per-attempt settings: the schedule's field, else the job's option, else the setting.

    ``jobs`` caches the job options by executor path for a batch of claims.
    """
    job = jobs.get(schedule.executor) if jobs is not None else None
    if job is None:
        try:
            job = allow_list.job_options(schedule.executor)
        except Exception:  # noqa: BLE001 - a disallowed path fails at run time, with its message
            job = executors.JobOptions(path=schedule.executor)
        if jobs is not None:
            jobs[schedule.executor] = job

    def pick(name: str, default: Any) -> Any:
        value = getattr(schedule, name)
        if value is None:
            value = getattr(job, name)
        return default if value is None else value

    return {
        "max_attempts": pick("max_attempts", cadence_settings.MAX_ATTEMPTS),
        "retry_base": pick("retry_base", cadence_settings.RETRY_BASE),
        "retry_cap": pick("retry_cap", cadence_settings.RETRY_CAP),
        "max_runtime": pick("max_runtime", cadence_settings.MAX_RUNTIME),
        "delivery": job.delivery,
        "isolation": job.isolation,
    }
