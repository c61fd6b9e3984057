"""``run_cadence`` with metrics on: ``/metrics`` is served on the loopback interface unless
``CADENCE_METRICS_ADDRESS`` says otherwise, in a real process, as a scraper meets it."""

import socket
from urllib.request import urlopen

import pytest

from benchmarks.fleet import Worker, child_env, database_env, run_cadence_args, stop_all

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def outward_address():
    """This machine's address on its default route (no packet is sent), or skip."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            pytest.skip("no network interface besides the loopback")
        address = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("no network interface besides the loopback")
    return address


def start(tmp_path, **settings):
    port = free_port()
    overrides = {"CADENCE_METRICS": True, "CADENCE_METRICS_PORT": port, **settings}
    args = run_cadence_args("tests.settings", "w-metrics")
    worker = Worker("w-metrics", args, child_env(database_env(), overrides), tmp_path)
    return worker, port


def reachable(address, port):
    try:
        socket.create_connection((address, port), timeout=5).close()
    except ConnectionRefusedError:
        return False
    return True


def test_run_cadence_serves_metrics_on_the_loopback_interface_only_by_default(tmp_path):
    outward = outward_address()
    worker, port = start(tmp_path)
    try:
        worker.wait_for_log(f"metrics serving addr=127.0.0.1 port={port}")
        with urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert "cadence_queue_depth" in response.read().decode()
        assert not reachable(outward, port)
    finally:
        stop_all([worker])


def test_run_cadence_listens_where_cadence_metrics_address_says(tmp_path):
    outward = outward_address()
    worker, port = start(tmp_path, CADENCE_METRICS_ADDRESS="0.0.0.0")
    try:
        worker.wait_for_log(f"metrics serving addr=0.0.0.0 port={port}")
        assert reachable(outward, port)
    finally:
        stop_all([worker])
