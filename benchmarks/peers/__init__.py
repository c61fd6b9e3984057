"""Peer schedulers run by ``python -m benchmarks compare``, each in its own virtualenv."""

from __future__ import annotations

from .base import NotSupported, Peer
from .peer_apscheduler import APScheduler
from .peer_bare_threads import BareThreads
from .peer_celery import CeleryBeat
from .peer_djangoq import DjangoQ
from .peer_procrastinate import Procrastinate

PEERS: dict[str, type[Peer]] = {
    p.name: p for p in (APScheduler, Procrastinate, DjangoQ, CeleryBeat, BareThreads)
}

__all__ = ["PEERS", "NotSupported", "Peer"]
