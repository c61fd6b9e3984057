"""The admin: schedules, calendars, attempts, dead letters, retries, workers, notifications and an
overview page (see docs/admin-tour.md).

Importing the package registers every ModelAdmin with the default admin site.
"""

from .attempts import AttemptAdmin
from .calendars import CalendarAdmin
from .failures import DeadLetterAdmin, RetryAdmin
from .notices import NoticeAdmin
from .overview import OverviewAdmin
from .schedules import ScheduleAdmin
from .workers import WorkerAdmin

__all__ = [
    "AttemptAdmin",
    "CalendarAdmin",
    "DeadLetterAdmin",
    "NoticeAdmin",
    "OverviewAdmin",
    "RetryAdmin",
    "ScheduleAdmin",
    "WorkerAdmin",
]
