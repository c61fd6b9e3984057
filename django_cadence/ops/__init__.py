"""Operations around the engine: status, retention, backfill, schedules declared in code."""
