#!/usr/bin/env bash
# Make this machine ready for `make test`: the system packages the test extra, the browser
# tests, the PgBouncer tests and the libfaketime tests need, and the PostgreSQL and MariaDB
# servers running. As root, missing packages are
# installed with apt-get and stopped servers are started; otherwise the script stops at once
# and prints the one command to run. A server that still cannot be reached fails the run.
#
# CADENCE_SETUP_DRY_RUN=1 prints what would be run instead of running it (used by the tests).
set -euo pipefail

DRY_RUN=${CADENCE_SETUP_DRY_RUN:-}
UID_NOW=${CADENCE_SETUP_UID:-$(id -u)}

run() {
  if [ -n "$DRY_RUN" ]; then echo "would run: $*"; else "$@"; fi
}

missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if ! pkg-config --exists libmariadb 2>/dev/null && ! pkg-config --exists mysqlclient 2>/dev/null; then
  missing+=(libmariadb-dev)
fi
[ -x "${CADENCE_CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
# A real PgBouncer in front of PostgreSQL (tests/support/pgbouncer.py), run by the tests
# themselves: Debian's service for it is not started.
[ -x "${CADENCE_PGBOUNCER:-/usr/sbin/pgbouncer}" ] || missing+=(pgbouncer)
# libfaketime, preloaded into a run_cadence child to move its clock (tests/calendars).
[ -e "${CADENCE_LIBFAKETIME:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}" ] || missing+=(libfaketime)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$UID_NOW" != 0 ]; then
    echo "make test needs system packages that are missing; run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  run apt-get update -qq
  run apt-get install -y -qq "${missing[@]}"
fi

wait_for() {  # wait_for NAME COMMAND...: up to 60 s
  local name=$1; shift
  [ -n "$DRY_RUN" ] && return 0
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "setup: $name cannot be reached on 127.0.0.1; the tests need it" >&2
  return 1
}

start_if_down() {  # start_if_down NAME PROBE START...
  local name=$1 probe=$2; shift 2
  if ! eval "$probe" >/dev/null 2>&1; then
    if [ "$UID_NOW" != 0 ]; then
      echo "setup: $name is not running; start it (as root): $*" >&2
      exit 1
    fi
    echo "setup: starting $name"
    run "$@" || true
  fi
}

if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  start_if_down PostgreSQL "pg_isready -h 127.0.0.1 -p 5432" \
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
fi
wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432

if [ -x /usr/sbin/mariadbd ]; then
  start_if_down MariaDB "mariadb-admin -h 127.0.0.1 -uroot ping" \
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi
wait_for MariaDB mariadb-admin -h 127.0.0.1 -uroot ping
