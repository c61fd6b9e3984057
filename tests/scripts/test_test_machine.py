"""``scripts/test-machine.sh``: what ``make test`` does about a machine that lacks something."""

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-machine.sh"


def run_setup(uid: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the script in dry-run mode as ``uid``, with a browser, a PgBouncer and a
    libfaketime that are never there."""
    environ = {
        **os.environ,
        "CADENCE_SETUP_DRY_RUN": "1",
        "CADENCE_SETUP_UID": uid,
        "CADENCE_CHROMIUM": "/nonexistent/chromium",
        "CADENCE_PGBOUNCER": "/nonexistent/pgbouncer",
        "CADENCE_LIBFAKETIME": "/nonexistent/libfaketime.so.1",
        **env,
    }
    return subprocess.run(
        ["bash", str(SCRIPT)], env=environ, capture_output=True, text=True, check=False
    )


def test_without_root_it_stops_at_once_printing_the_one_command_to_run():
    result = run_setup("1000")

    assert result.returncode == 1
    assert "sudo apt-get install -y chromium pgbouncer libfaketime" in result.stderr
    assert "would run" not in result.stdout


def test_as_root_it_installs_what_is_missing_with_apt_get():
    result = run_setup("0")

    assert result.returncode == 0, result.stderr
    assert "would run: apt-get update -qq" in result.stdout
    assert "would run: apt-get install -y -qq chromium pgbouncer libfaketime" in result.stdout


def test_a_machine_with_everything_installs_nothing():
    result = run_setup(
        "1000",
        CADENCE_CHROMIUM="/usr/bin/chromium",
        CADENCE_PGBOUNCER="/usr/sbin/pgbouncer",
        CADENCE_LIBFAKETIME="/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    )

    assert result.returncode == 0, result.stderr
    assert "apt-get" not in result.stdout + result.stderr
