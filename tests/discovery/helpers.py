"""A plain function that a ``jobs.py`` wraps with ``job(...)``."""


def send_digest() -> str:
    return "sent"
