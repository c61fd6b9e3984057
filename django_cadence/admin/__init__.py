"""The admin: schedules, attempts, dead letters and retries (see docs/admin-tour.md).

Importing the package registers every ModelAdmin with the default admin site.
"""

from .attempts import AttemptAdmin
from .failures import DeadLetterAdmin, RetryAdmin
from .schedules import ScheduleAdmin
from .workers import WorkerAdmin

__all__ = ["AttemptAdmin", "DeadLetterAdmin", "RetryAdmin", "ScheduleAdmin", "WorkerAdmin"]
