"""The durable records: ``Schedule`` (a rule producing instants), ``Attempt`` (one of its
occurrences), ``Worker`` (a running engine) and ``Lock`` (a named row for fleet-wide work).
"""

from .attempt import Attempt, AttemptQuerySet
from .choices import TERMINAL_STATUSES, Kind, Misfire, Overlap, Status, Trigger
from .proxies import DeadLetter, Overview, Retry, ScheduleOperation
from .schedule import Schedule, ScheduleQuerySet, default_timezone
from .worker import Lock, Worker, WorkerQuerySet

__all__ = [
    "TERMINAL_STATUSES",
    "Attempt",
    "AttemptQuerySet",
    "DeadLetter",
    "Kind",
    "Lock",
    "Misfire",
    "Overlap",
    "Overview",
    "Retry",
    "Schedule",
    "ScheduleOperation",
    "ScheduleQuerySet",
    "Status",
    "Trigger",
    "Worker",
    "WorkerQuerySet",
    "default_timezone",
]
