"""django-cadence: durable cron, interval and one-shot jobs for Django."""
