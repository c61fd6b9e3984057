"""Prometheus metrics: optional (``pip install "django-cadence-scheduler[metrics]"``), off by
default.

With ``CADENCE_METRICS = True``:

- in each engine process, ``start_http_server(port)`` (or ``start_from_settings()`` with
  ``CADENCE_METRICS_PORT``) serves ``/metrics`` at ``CADENCE_METRICS_ADDRESS`` (127.0.0.1
  unless set); ``install(registry)`` instead adds everything to a registry the project
  already exposes;
- in a web process, :func:`metrics_view` serves the database-wide gauges (mount it in urls).

Series (labels are only ``schedule`` (its name), ``status``, ``state``, ``channel``,
``event`` and ``queue``; never payloads, errors or anything a job provides):

- ``cadence_firing_lag_seconds{schedule}`` histogram: first try's start minus its occurrence;
- ``cadence_dead_letters_total{schedule}``, ``cadence_lease_recoveries_total{schedule}``:
  counted by the engine process that wrote them (sum over engines);
- ``cadence_attempts{schedule,status}``, ``cadence_queue_depth`` (ready pending attempts),
  ``cadence_queue_oldest_seconds``, ``cadence_workers{state}``: queried from the database at
  scrape time, the same whichever process serves them. The attempts count reads every
  attempt row: prune finished attempts (``cadence_prune``) to keep scrapes cheap.
- ``cadence_queue_ready{queue}``, ``cadence_queue_oldest_wait_seconds{queue}`` and
  ``cadence_queue_workers{queue}`` (live workers serving it), per queue a schedule names:
  alert on ``cadence_queue_ready > 0 and cadence_queue_workers == 0``, work nobody will run.
- ``cadence_schedule_last_success_timestamp_seconds{schedule}`` (Unix time the newest
  succeeded occurrence finished; absent until one did) and ``cadence_schedule_overdue{schedule}``
  (1 while the schedule is overdue, else 0; ``models/overdue.py``), per enabled schedule: alert
  on ``cadence_schedule_overdue == 1``.
- ``cadence_notifications{channel,status}`` (messages of ``CADENCE_NOTIFY`` by delivery
  status), ``cadence_notification_failures{channel}`` (sends a channel did not take) and
  ``cadence_notice_open{event}`` (open episodes), read from the outbox at scrape time.

If ``CADENCE_METRICS`` is False every function here is a no-op; if it is True and
``prometheus_client`` is missing, they raise ``ImproperlyConfigured`` saying what to install.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Count, Min, Sum
from django.utils import timezone

from . import signals, store
from .clock import default_clock
from .conf import cadence_settings
from .models import Attempt, Delivery, Notice, Schedule, Worker
from .models.overdue import silences, with_last_success
from .ops.queues import queue_states
from .ops.status import worker_timeout

logger = logging.getLogger(__name__)

LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600)
_lock = threading.Lock()
_installed: dict[int, _EventMetrics] = {}  # by id(registry)


def enabled() -> bool:
    return cadence_settings.METRICS


def _prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ImproperlyConfigured(
            "CADENCE_METRICS is True but prometheus-client is not installed: "
            'pip install "django-cadence-scheduler[metrics]", or set CADENCE_METRICS = False.'
        ) from None
    return prometheus_client


class DatabaseCollector:
    """Gauges read from the database at each scrape: what every process sees alike."""

    def describe(self) -> Any:
        """The names, without a query: registering must not need the database."""
        from prometheus_client.core import GaugeMetricFamily

        yield GaugeMetricFamily("cadence_attempts", "", labels=["schedule", "status"])
        yield GaugeMetricFamily("cadence_queue_depth", "")
        yield GaugeMetricFamily("cadence_queue_oldest_seconds", "")
        yield GaugeMetricFamily("cadence_workers", "", labels=["state"])
        yield GaugeMetricFamily(
            "cadence_schedule_last_success_timestamp_seconds", "", labels=["schedule"]
        )
        yield GaugeMetricFamily("cadence_schedule_overdue", "", labels=["schedule"])
        yield GaugeMetricFamily("cadence_notifications", "", labels=["channel", "status"])
        yield GaugeMetricFamily("cadence_notification_failures", "", labels=["channel"])
        yield GaugeMetricFamily("cadence_notice_open", "", labels=["event"])
        yield GaugeMetricFamily("cadence_queue_ready", "", labels=["queue"])
        yield GaugeMetricFamily("cadence_queue_oldest_wait_seconds", "", labels=["queue"])
        yield GaugeMetricFamily("cadence_queue_workers", "", labels=["queue"])

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        connection = connections[store.alias()]
        opened = connection.connection is None  # a scrape thread: close what we open
        try:
            now = default_clock().now()
            attempts = GaugeMetricFamily(
                "cadence_attempts",
                "Attempts by schedule and status.",
                labels=["schedule", "status"],
            )
            rows = (
                Attempt.objects.values_list("schedule__name", "status")
                .annotate(n=Count("id"))
                .order_by()
            )
            for name, status, n in rows:
                attempts.add_metric([name, status], n)
            yield attempts
            ready = Attempt.objects.ready(now)
            yield GaugeMetricFamily(
                "cadence_queue_depth", "Pending attempts ready to start.", value=ready.count()
            )
            oldest = ready.aggregate(at=Min("retry_at"))["at"]
            yield GaugeMetricFamily(
                "cadence_queue_oldest_seconds",
                "How long the oldest ready attempt has waited to start.",
                value=max(0.0, (now - oldest).total_seconds()) if oldest else 0.0,
            )
            workers = GaugeMetricFamily("cadence_workers", "Workers by state.", labels=["state"])
            timeout = worker_timeout()
            workers.add_metric(["live"], Worker.objects.live(now, timeout).count())
            workers.add_metric(["lost"], Worker.objects.lost(now, timeout).count())
            yield workers
            yield from _queue_gauges(now)
            yield from _silence_gauges(now)
            yield from _notification_gauges()
        finally:
            if opened:
                connection.close()


def _queue_gauges(now: datetime) -> Any:
    """Per queue: ready attempts, the oldest one's wait, and the live workers serving it (0
    while work waits there: nobody will run it)."""
    from prometheus_client.core import GaugeMetricFamily

    ready = GaugeMetricFamily(
        "cadence_queue_ready", "Ready attempts of enabled schedules, by queue.", labels=["queue"]
    )
    oldest = GaugeMetricFamily(
        "cadence_queue_oldest_wait_seconds",
        "How long the oldest ready attempt of each queue has waited to start.",
        labels=["queue"],
    )
    workers = GaugeMetricFamily(
        "cadence_queue_workers", "Live workers serving each queue.", labels=["queue"]
    )
    for state in queue_states(now):
        ready.add_metric([state.name], state.ready)
        wait = state.oldest_wait.total_seconds() if state.oldest_wait is not None else 0.0
        oldest.add_metric([state.name], wait)
        workers.add_metric([state.name], state.workers)
    yield ready
    yield oldest
    yield workers


def _silence_gauges(now: datetime) -> Any:
    from prometheus_client.core import GaugeMetricFamily

    last_success = GaugeMetricFamily(
        "cadence_schedule_last_success_timestamp_seconds",
        "Unix time at which the schedule's newest succeeded occurrence finished.",
        labels=["schedule"],
    )
    overdue = GaugeMetricFamily(
        "cadence_schedule_overdue",
        "1 while the schedule has gone longer than it may without a success (max_silence).",
        labels=["schedule"],
    )
    enabled = with_last_success(Schedule.objects.enabled().order_by("name"))
    for state in silences(now, enabled):
        if state.last_success_at is not None:
            last_success.add_metric([state.name], state.last_success_at.timestamp())
        overdue.add_metric([state.name], 1.0 if state.overdue else 0.0)
    yield last_success
    yield overdue


def _notification_gauges() -> Any:
    """The outbox by channel and status, the failed sends by channel, the open episodes."""
    from prometheus_client.core import GaugeMetricFamily

    messages = GaugeMetricFamily(
        "cadence_notifications",
        "Notification messages by channel and delivery status (sent, pending, sending, failed).",
        labels=["channel", "status"],
    )
    failures = GaugeMetricFamily(
        "cadence_notification_failures",
        "Sends a channel did not take (each retried until the channel's tries run out).",
        labels=["channel"],
    )
    rows = (
        Delivery.objects.values_list("channel", "status")
        .annotate(n=Count("id"), failed=Sum("failures"))
        .order_by()
    )
    failed_by_channel: dict[str, int] = {}
    for channel, status, n, failed in rows:
        messages.add_metric([channel, status], n)
        failed_by_channel[channel] = failed_by_channel.get(channel, 0) + (failed or 0)
    for channel, failed in sorted(failed_by_channel.items()):
        failures.add_metric([channel], failed)
    episodes = GaugeMetricFamily(
        "cadence_notice_open", "Open notification episodes by event.", labels=["event"]
    )
    for event, n in Notice.objects.open().values_list("event").annotate(n=Count("id")).order_by():
        episodes.add_metric([event], n)
    yield messages
    yield failures
    yield episodes


class _EventMetrics:
    """What an engine process counts as it happens, from the app's signals."""

    def __init__(self, prometheus: Any, registry: Any) -> None:
        self.lag = prometheus.Histogram(
            "cadence_firing_lag_seconds",
            "Seconds from an occurrence to the start of its first try.",
            ["schedule"],
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.dead_letters = prometheus.Counter(
            "cadence_dead_letters", "Attempts dead-lettered.", ["schedule"], registry=registry
        )
        self.recoveries = prometheus.Counter(
            "cadence_lease_recoveries",
            "Running attempts recovered after their worker lost its lease.",
            ["schedule"],
            registry=registry,
        )
        self.collector = DatabaseCollector()
        registry.register(self.collector)


def install(registry: Any = None) -> bool:
    """Register the metrics on ``registry`` (default: prometheus_client's); False if disabled."""
    if not enabled():
        return False
    prometheus = _prometheus()
    registry = prometheus.REGISTRY if registry is None else registry
    with _lock:
        if id(registry) not in _installed:
            _installed[id(registry)] = _EventMetrics(prometheus, registry)
        _connect()
    return True


def uninstall(registry: Any) -> None:
    """Take the metrics off ``registry`` again (tests, reloads)."""
    with _lock:
        metrics = _installed.pop(id(registry), None)
    if metrics is not None:
        for collector in (metrics.lag, metrics.dead_letters, metrics.recoveries, metrics.collector):
            registry.unregister(collector)


def start_http_server(
    port: int | None = None, addr: str | None = None, registry: Any = None
) -> Any:
    """Serve ``/metrics`` from this process on ``port`` (default ``CADENCE_METRICS_PORT``) at
    ``addr`` (default ``CADENCE_METRICS_ADDRESS``, the loopback interface: the series name
    every schedule, so reaching them from elsewhere is the operator's choice).

    Returns the server (``.server_port``, ``.shutdown()``), or None when metrics are off.
    """
    if not enabled():
        logger.info("metrics not started: CADENCE_METRICS is False")
        return None
    port = cadence_settings.METRICS_PORT if port is None else port
    if port is None:
        raise ImproperlyConfigured("Give start_http_server a port or set CADENCE_METRICS_PORT.")
    prometheus = _prometheus()
    registry = prometheus.REGISTRY if registry is None else registry
    install(registry)
    addr = cadence_settings.METRICS_ADDRESS if addr is None else addr
    server, _thread = prometheus.start_http_server(port, addr=addr, registry=registry)
    logger.info("metrics serving addr=%s port=%s", addr, server.server_port)
    return server


def start_from_settings() -> Any:
    """For an engine's start-up: serve metrics if ``CADENCE_METRICS`` and a port are set."""
    if enabled() and cadence_settings.METRICS_PORT is not None:
        return start_http_server(cadence_settings.METRICS_PORT)
    return None


def metrics_view(request: Any) -> Any:
    """A Django view of the default registry (mount it behind your own access control)."""
    from django.http import Http404, HttpResponse

    if not install():
        raise Http404("CADENCE_METRICS is False")
    prometheus = _prometheus()
    return HttpResponse(
        prometheus.generate_latest(prometheus.REGISTRY), content_type=prometheus.CONTENT_TYPE_LATEST
    )


# --- receivers ----------------------------------------------------------------------------


def _each() -> list[_EventMetrics]:
    with _lock:
        return list(_installed.values())


def _on_started(
    sender: Any, *, schedule: str, occurrence_at: datetime, try_number: int, **kw: Any
) -> None:
    if try_number != 1:
        return  # a retry's start is its backoff, not lag
    started_at = kw.get("started_at") or timezone.now()
    lag = max(0.0, (started_at - occurrence_at).total_seconds())
    for metrics in _each():
        metrics.lag.labels(schedule=schedule).observe(lag)


def _on_dead_lettered(sender: Any, *, schedule: str, **kw: Any) -> None:
    for metrics in _each():
        metrics.dead_letters.labels(schedule=schedule).inc()


def _on_recovered(sender: Any, *, schedule: str, **kw: Any) -> None:
    for metrics in _each():
        metrics.recoveries.labels(schedule=schedule).inc()


class _RecoveryRecords(logging.Handler):
    """Until ``recovery.py`` sends an ``attempt_recovered`` signal: its log line, read by args."""

    PREFIX = "attempt recovered "

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, str) and record.msg.startswith(self.PREFIX) and record.args:
            _on_recovered(None, schedule=str(record.args[1]))  # type: ignore[index]


_recovery_records = _RecoveryRecords(level=logging.WARNING)


def _connect() -> None:
    signals.attempt_started.connect(_on_started, dispatch_uid="cadence-metrics-started")
    signals.attempt_dead_lettered.connect(_on_dead_lettered, dispatch_uid="cadence-metrics-dead")
    recovered = getattr(signals, "attempt_recovered", None)
    if recovered is not None:
        recovered.connect(_on_recovered, dispatch_uid="cadence-metrics-recovered")
        return
    recovery_logger = logging.getLogger("django_cadence.recovery")
    if _recovery_records not in recovery_logger.handlers:
        recovery_logger.addHandler(_recovery_records)
