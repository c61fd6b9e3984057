"""The durable records: ``Schedule`` (a rule producing instants), ``Calendar`` (days it
skips), ``Attempt`` (one of its
occurrences), ``Worker`` (a running engine), ``Lock`` (a named row for fleet-wide work), and
``Notice`` and ``Delivery`` (an episode of something broken, and its messages).
"""

from .attempt import Attempt, AttemptQuerySet
from .calendar import Calendar, CalendarMode
from .choices import TERMINAL_STATUSES, Kind, Misfire, Overlap, Shift, Status, Trigger
from .notice import Delivery, DeliveryStatus, Event, Notice, NoticeState
from .proxies import DeadLetter, Overview, Retry, ScheduleOperation
from .schedule import Schedule, ScheduleQuerySet, default_timezone
from .worker import Lock, Worker, WorkerQuerySet

__all__ = [
    "TERMINAL_STATUSES",
    "Attempt",
    "AttemptQuerySet",
    "Calendar",
    "CalendarMode",
    "DeadLetter",
    "Delivery",
    "DeliveryStatus",
    "Event",
    "Kind",
    "Lock",
    "Misfire",
    "Notice",
    "NoticeState",
    "Overlap",
    "Overview",
    "Retry",
    "Schedule",
    "ScheduleOperation",
    "ScheduleQuerySet",
    "Shift",
    "Status",
    "Trigger",
    "Worker",
    "WorkerQuerySet",
    "default_timezone",
]
