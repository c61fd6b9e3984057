"""Models of the test app: only what tests need to observe effects in the database."""

from django.db import models
from django.utils import timezone


class Effect(models.Model):
    """One effect of a job, keyed so a duplicate run shows up as a second row or a conflict."""

    key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.key
