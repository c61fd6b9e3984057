from django.db import models
from django.utils import timezone


class Effect(models.Model):
    """One effect of a chaos job, keyed so that a duplicate run shows up as a second row (the
    counting job) or a conflict (the atomic ones)."""

    key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.key
