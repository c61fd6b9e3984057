from django.db import models


class Firing(models.Model):
    """One start of a benchmark job: which occurrence it was and when it really started.

    ``started_at`` is the local clock read as the job's first statement; ``due_at`` is the
    occurrence it was started for. Peers write the same row with plain SQL
    (table ``bench_firing``).
    """

    schedule_name = models.CharField(max_length=200)
    due_at = models.DateTimeField()
    started_at = models.DateTimeField()
    worker = models.CharField(max_length=100, blank=True)

    class Meta:
        db_table = "bench_firing"
        indexes = (models.Index(fields=("due_at",), name="bench_firing_due_idx"),)

    def __str__(self) -> str:
        return f"{self.schedule_name}@{self.due_at.isoformat()}"
