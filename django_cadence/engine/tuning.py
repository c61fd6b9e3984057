"""The engine's tuning constants, in one place, each with the reason for its value.

These are not settings: each is tied to another (a window to a probe, a backoff to a window)
or to what the engine measures, and docs/design.md ("The engine", "Lost workers") states
them. What an operator may tune is a ``CADENCE_*`` setting (:mod:`django_cadence.conf`).
"""

from __future__ import annotations

from datetime import timedelta

# --- waking and sleeping (loop) ------------------------------------------------------------

# How long a finished try's wake-up waits for the other running tries
# (``lifecycle._gather_finishes``).
FINISH_WINDOW = 0.002
# While tries wait for threads, a finished try wakes the engine only once the queue is empty
# (or after this many seconds): in a burst the threads start the queued tries first, and the
# engine records their outcomes after, in fewer rounds, instead of taking the interpreter from
# them after every finish. The threads are still busy with their tries when it does.
QUEUE_HOLD = 0.25
# A wait that overran by this many seconds means the process was paused (SIGSTOP, a frozen VM).
PAUSE = 1.0
# How old the reading of the next due instant may be while work flows and it is reused.
NEXT_DUE_MAX_AGE = timedelta(seconds=1)

# Each tick, the engine's thread reads the database server's clock if the last reading would
# expire (``DatabaseClock.resync``, 5 s) within this many seconds, so the start timer and the
# try threads, which read the clock on an instant, find a reading that is still valid.
CLOCK_REFRESH = 1.0

# --- queueing tries for threads (tries) ----------------------------------------------------

# While the tries' average run time is under QUEUE_MAX_RUNTIME seconds, a worker holds more
# tries than it has threads (the first run, the rest wait for threads): as many rounds of
# ``concurrency`` as its threads would start within QUEUE_TIME, up to QUEUE_MAX_ROUNDS.
QUEUE_MAX_RUNTIME = 0.05
QUEUE_TIME = 0.15
QUEUE_MAX_ROUNDS = 16
# A try that found no thread within this many seconds of its start is handed back.
QUEUE_MAX_WAIT = 1.0
# A try whose thread takes it more than this many seconds after its instant (or its claim,
# for a try claimed once its instant had passed) is not started but handed back: a wait that
# long (past QUEUE_MAX_WAIT, by more than PAUSE) means the process was paused or starved since
# its claim, long enough for its claim to have been recovered and its attempt run elsewhere
# (docs/design.md, "Lost workers"). Its engine would learn that only at its next renewal,
# after the try had started.
START_LATE = QUEUE_MAX_WAIT + PAUSE

# --- starting ahead of the due instant (tries, leases) ------------------------------------

# Tries claimed ahead of their instant that one worker may hold (``TryBudget.ahead_budget``):
# AHEAD_TRIES whatever its number of threads, enough for a burst of a thousand to be claimed
# before its instant (a budget in rounds of a small pool's threads would leave most of the
# burst to be claimed after its instant), or AHEAD_ROUNDS rounds of ``concurrency`` for a
# larger pool; once its tries are seen to be long, only what its threads would start within
# ``QUEUE_MAX_WAIT``. A try that waits that long for a thread is handed back, so a burst
# claimed by one worker of a fleet reaches the others within a second.
AHEAD_TRIES = 1024
AHEAD_ROUNDS = 128
# The start timer re-reads the engine clock at least this often (seconds), so a clock that
# was stepped (the fake clock of the tests, a resync of the database clock) is followed.
START_TIMER_STEP = 0.1

# --- threads (pool) ------------------------------------------------------------------------

# A try thread idle this long exits and closes its database connections: a pool sized for
# bursts costs nothing between them, and a steady trickle keeps its threads warm.
THREAD_IDLE_EXIT = 60.0
# At shutdown, the longest the engine waits for a thread of its own (an idle try thread
# closing its connections, an overdue probe under way) before it goes on without it.
CLOSE_WAIT = 5.0

# --- process-isolated tries (execution) -----------------------------------------------------

# How often the thread that runs a try in a child process looks for its result, its death or
# a cancel: a cancelled try's child is killed within this many seconds.
CHILD_POLL = 0.05
# How long that thread waits for the child to exit once it answered, died or was killed.
CHILD_EXIT_WAIT = 5.0

# --- lost workers (lost_workers) -----------------------------------------------------------

# How often the recovery read runs: every half second while another worker with a session
# lock runs attempts, or this one holds tries (its own lock may be cut), else every second.
RECOVERY_PROBE = timedelta(seconds=1)
LIVENESS_PROBE = timedelta(seconds=0.5)
# How long another worker's lock must be seen gone, by probes of a connected engine, before
# its running attempts are recovered: a cut worker finds out and takes it again within a probe.
LIVENESS_WINDOW = timedelta(seconds=1)
# A lock first seen gone counts from the probe's reading of the clock, taken as its tick
# began, unless the look returned more than this many seconds after it (a slow tick): then
# from this long before the look returned. So the window is never shortened by more than
# this, and probes half a second apart still recover on the third (the window's end).
SIGHTING_SLACK = 0.1
# A try starts only while its worker has seen its own session lock held within this many
# seconds (counted from when the look was sent; ``own_lock``): another worker recovers its
# tries only once it has seen that lock gone for LIVENESS_WINDOW, less SIGHTING_SLACK at
# most. The rest covers the two engines' clock estimates and the moment between the check
# and the job's start. Its probes, every LIVENESS_PROBE while it holds tries, keep the
# sighting this fresh; a thread that finds it older looks itself.
START_CONFIRMED = LIVENESS_WINDOW.total_seconds() - SIGHTING_SLACK - 0.15
# After this engine's own reconnect, how long it trusts no sighting of a lost lock and no
# expired lease: longer than a worker's reconnect backoff while it holds tries
# (``RECONNECT_BACKOFF_HOLDING``), so that a live worker is back, locked and re-asserted first.
RESTART_WINDOW = timedelta(seconds=5)
RECONNECT_BACKOFF_HOLDING = 1.0
RECONNECT_BACKOFF_IDLE = 10.0

# --- a worker cut off from its database (watchdog) -----------------------------------------

# A claim is this worker's until the lease counted from the engine clock's reading it was
# written with, less this many seconds: the estimate that reading came from trails the
# server by up to its round trip (docs/design.md, "Time"). The watchdog stops a try then;
# another worker may recover it only CADENCE_RECOVERY_GRACE after the lease, on its clock.
LEASE_MARGIN = 0.25
# The longest the watchdog sleeps with nothing to watch; a claim wakes it anyway.
WATCHDOG_IDLE = 1.0

# --- overdue schedules (overdue) ----------------------------------------------------------

# How often the engine looks for schedules newly overdue (``max_silence``): an alert within
# half a minute, for one indexed read.
OVERDUE_PROBE = timedelta(seconds=30)
# The probe reads and judges every schedule that may be overdue, which takes the engine's
# thread (and the interpreter) for up to a millisecond per active schedule: it waits for a
# moment when no try of this worker runs or starts within twice its last duration, and at
# least this long (seconds); past one more OVERDUE_PROBE it runs anyway.
OVERDUE_QUIET = 0.1

# --- stuck threads (stuck) -----------------------------------------------------------------

# A job that heeds its cancel event returns within moments of its timeout; a thread still in
# its job this long after is stuck.
STUCK_AFTER = timedelta(seconds=1)
