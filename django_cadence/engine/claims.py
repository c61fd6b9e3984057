"""What a worker holds for one try (``Claim``), and the settings it runs under
(:func:`..models.options.resolved_options`, resolved once, at the claim).

A claim carries everything needed to run the try and record its outcome without reading the
rows again: the attempt, its fresh claim token (invariant 3, docs/design.md), the schedule's
job and payload, and the retry and run-time options resolved once, at the claim.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..executors import calling
from ..executors import registry as executors
from ..models.options import resolved_options
from . import uncertainty


@dataclass
class Claim:
    """Everything a worker needs to run one try and record it, without re-reading rows."""

    attempt_id: int
    token: str
    schedule_id: int
    schedule_name: str
    worker: str
    executor: str
    payload: dict[str, Any]
    occurrence_at: datetime
    trigger: str
    tries: int  # including this try
    recoveries: int
    started_at: datetime
    max_attempts: int
    retry_base: timedelta
    retry_cap: timedelta
    max_runtime: timedelta
    delivery: str
    isolation: str
    history: list[dict[str, Any]]
    pause_after_failures: int | None
    queue: str = "default"  # its schedule's, as claimed: what the worker's thread shares count
    cancel_event: threading.Event = field(default_factory=threading.Event)
    # True while the job's own code runs (in its thread, or its child process alive): what
    # the watchdog may not let outlive the claim (the engine's fenced writes after it may).
    in_job: bool = field(default=False, init=False)
    _context: calling.AttemptContext | None = field(default=None, init=False, repr=False)

    @property
    def deadline(self) -> datetime:
        return self.started_at + self.max_runtime

    @property
    def idempotency_key(self) -> str:
        return calling.idempotency_key(self.schedule_id, self.occurrence_at, self.trigger)

    def context(self) -> calling.AttemptContext:
        """What the job receives, built once: a try claimed ahead has it built before its
        instant, so its thread starts the job sooner."""
        if self._context is None:
            self._context = calling.AttemptContext(
                attempt_id=self.attempt_id,
                schedule_name=self.schedule_name,
                occurrence_at=self.occurrence_at,
                try_number=self.tries,
                idempotency_key=self.idempotency_key,
                deadline=self.deadline,
                cancel_event=self.cancel_event,
                mark=uncertainty.marker(self.attempt_id, self.token),
            )
        return self._context

    def event(self) -> dict[str, Any]:
        """The fields every attempt signal carries."""
        return {
            "attempt_id": self.attempt_id,
            "schedule": self.schedule_name,
            "occurrence_at": self.occurrence_at,
            "try_number": self.tries,
            "worker": self.worker,
        }


def claim_of(
    candidate: Any,
    token: str,
    now: datetime,
    worker: str,
    jobs: dict[str, executors.JobOptions] | None = None,
) -> Claim:
    """The claim of one candidate row (``leases._CLAIM_FIELDS``), its try counted."""
    schedule = _ScheduleSettings(
        executor=candidate.schedule_executor,
        max_attempts=candidate.schedule_max_attempts,
        retry_base=candidate.schedule_retry_base,
        retry_cap=candidate.schedule_retry_cap,
        max_runtime=candidate.schedule_max_runtime,
    )
    return Claim(
        worker=worker,
        attempt_id=candidate.id,
        token=token,
        schedule_id=candidate.schedule_id,
        schedule_name=candidate.schedule_name,
        executor=candidate.schedule_executor,
        payload=candidate.schedule_payload,
        occurrence_at=candidate.occurrence_at,
        trigger=candidate.trigger,
        tries=candidate.tries + 1,
        recoveries=candidate.recoveries,
        started_at=now,
        history=list(candidate.history or []),
        pause_after_failures=candidate.schedule_pause_after_failures,
        queue=candidate.schedule_queue,
        **resolved_options(schedule, jobs),
    )


@dataclass(frozen=True)
class _ScheduleSettings:
    """The schedule fields ``resolved_options`` reads, from a claim's row."""

    executor: str
    max_attempts: int | None
    retry_base: timedelta | None
    retry_cap: timedelta | None
    max_runtime: timedelta | None
