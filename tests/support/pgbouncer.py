"""A real PgBouncer in front of the local PostgreSQL server, on a free port of its own.

Debian's ``pgbouncer`` package (``scripts/test-machine.sh`` installs it): a generated ini and
userlist, ``auth_type = trust``, every database forwarded to the server the tests use. It
runs in the foreground as a child of the test, its log on its standard error, which goes to
a file beside its ini. PgBouncer refuses to run as root, so as root it drops to the
``postgres`` user (``-u``) once it has read its files.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BINARY = os.environ.get("CADENCE_PGBOUNCER", "/usr/sbin/pgbouncer")
RUN_AS = "postgres"  # the server's own user: present wherever Debian's PostgreSQL is


@dataclass
class PgBouncer:
    """A running PgBouncer: its port, its pool mode and its log."""

    port: int
    pool_mode: str
    directory: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        return (self.directory / "pgbouncer.log").read_text(errors="replace")

    def env(self) -> dict[str, str]:
        """The environment that points a ``run_cadence`` child at this PgBouncer
        (``benchmarks.fleet.databases_from_env`` reads it)."""
        return {"CADENCE_PG_HOST": "127.0.0.1", "CADENCE_PG_PORT": str(self.port)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_config(
    directory: Path,
    *,
    port: int,
    pool_mode: str,
    server_host: str,
    server_port: str,
    user: str,
    extra: dict[str, str] | None = None,
) -> Path:
    """The ini and userlist of a PgBouncer that forwards every database to the server."""
    (directory / "userlist.txt").write_text(f'"{user}" ""\n')
    settings = {
        "listen_addr": "127.0.0.1",
        "listen_port": str(port),
        "unix_socket_dir": "",
        "auth_type": "trust",
        "auth_file": str(directory / "userlist.txt"),
        "pool_mode": pool_mode,
        "max_client_conn": "500",
        "default_pool_size": "40",
        "logfile": "",  # standard error
        "pidfile": "",
        **(extra or {}),
    }
    lines = ["[databases]", f"* = host={server_host} port={server_port}", "[pgbouncer]"]
    lines += [f"{name} = {value}" for name, value in settings.items()]
    ini = directory / "pgbouncer.ini"
    ini.write_text("\n".join(lines) + "\n")
    return ini


@contextlib.contextmanager
def running(
    directory: Path,
    pool_mode: str,
    *,
    server_host: str = "127.0.0.1",
    server_port: str = "5432",
    user: str = "postgres",
    extra: dict[str, str] | None = None,
    port: int | None = None,
) -> Iterator[PgBouncer]:
    """Start PgBouncer in ``pool_mode`` (on ``port``, else a free one), wait until it accepts
    connections, stop it on exit.

    A missing PgBouncer fails (it is a test dependency, as the servers are), never skips.
    """
    if not os.access(BINARY, os.X_OK):
        raise AssertionError(
            f"PgBouncer is not installed ({BINARY}): run scripts/test-machine.sh as root, "
            "or apt-get install pgbouncer"
        )
    directory.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    ini = write_config(
        directory,
        port=port,
        pool_mode=pool_mode,
        server_host=server_host,
        server_port=server_port,
        user=user,
        extra=extra,
    )
    args = [BINARY, str(ini)]
    if os.geteuid() == 0:
        args[1:1] = ["-u", RUN_AS]
    with (directory / "pgbouncer.log").open("wb") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    bouncer = PgBouncer(port, pool_mode, directory, process)
    try:
        _wait_for_port(bouncer)
        yield bouncer
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _wait_for_port(bouncer: PgBouncer, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if bouncer.process.poll() is not None:
            code = bouncer.process.returncode
            raise AssertionError(f"PgBouncer exited ({code}): {bouncer.log()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", bouncer.port), 1):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"PgBouncer did not listen on {bouncer.port} in {timeout:g} s")
        time.sleep(0.05)
