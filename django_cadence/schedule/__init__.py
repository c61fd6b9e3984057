"""Schedule math: cron, intervals, one-shots, policies and their words; pure, no ORM."""
