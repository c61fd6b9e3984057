"""Operations around the engine: status, health checks, retention, backfill, schedules
declared in code and imported from other schedulers, the notifications' watchdog."""
