"""Running one try: in a thread (default), in a child process, or inside the claim's
transaction (``delivery="atomic"``). Returns what happened; the engine records it.

Worker threads never write the attempt row themselves, except for atomic jobs, whose effect
and fenced success write must commit together: that is what makes them exactly-once.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from django.db import transaction

from .. import store
from ..exceptions import ExecutorNotAllowed, Permanent
from ..executors import allow_list, calling
from ..executors.payloads import outcome_or_none
from ..executors.redaction import clean_text
from .tuning import CHILD_EXIT_WAIT, CHILD_POLL

if TYPE_CHECKING:
    from .claims import Claim


@dataclass(frozen=True)
class TryResult:
    """``kind``: ``ok``, ``error``, ``permanent`` or ``lost`` (atomic fence failed)."""

    kind: str
    value: Any = None
    error: str = ""
    committed: bool = False  # the success write already happened (atomic jobs)
    reason: str = ""  # why a permanent failure is one, for the dead letter's note
    outcome_known: bool = True  # False: the job never said how it ended (its process died)


class LostLease(Exception):
    """Raised inside an atomic job's transaction to roll its effects back."""


def run_try(claim: Claim, now_for_commit: Callable[[], datetime]) -> TryResult:
    """Run ``claim``'s executor; ``now_for_commit()`` gives the instant for an atomic commit."""
    try:
        if claim.isolation == "process":
            return _run_in_process(claim)
        func = allow_list.resolve(claim.executor)
        if claim.delivery == "atomic":
            return _run_atomic(claim, func, now_for_commit)
        value = _call(claim, func)
        return TryResult("ok", outcome_or_none(value))
    except ExecutorNotAllowed as exc:
        # Retrying cannot fix it: only an operator or a deploy can (docs/design.md, Executors).
        return TryResult("permanent", error=str(exc), reason=NOT_ALLOWED)
    except Permanent as exc:
        return TryResult("permanent", error=_describe(exc))
    except (Exception, SystemExit, asyncio.CancelledError) as exc:  # noqa: BLE001
        # Any job failure is recorded. SystemExit and an async job's CancelledError too: not
        # Exceptions, they would end the thread silently and the try would never be recorded.
        return TryResult("error", error=_describe(exc))


NOT_ALLOWED = (
    "executor not allowed, so not retried; allow it again or give the schedule an allowed "
    "executor, then retry this attempt"
)


def _run_atomic(
    claim: Claim, func: Callable[..., Any], now_for_commit: Callable[[], datetime]
) -> TryResult:
    from .outcomes import announce_success, record_success

    try:
        with transaction.atomic(using=store.alias()):
            value = outcome_or_none(_call(claim, func))
            if not record_success(claim, value, now_for_commit(), announce=False):
                raise LostLease
    except LostLease:
        return TryResult("lost")
    announce_success(claim)  # receivers hear of the success once it is committed
    return TryResult("ok", value, committed=True)


def _call(claim: Claim, func: Callable[..., Any]) -> Any:
    """Call the job, saying while it runs (``Claim.in_job``)."""
    claim.in_job = True
    try:
        return calling.call(func, claim.payload, claim.context())
    finally:
        claim.in_job = False


def _describe(exc: BaseException) -> str:
    """The try's error as it is stored: the traceback, cleaned (``clean_text``). Never
    raises, whatever the exception's ``__str__`` or size: a failed try is always recorded."""
    try:
        text = "".join(traceback.format_exception(exc)).strip()
    except Exception:  # noqa: BLE001 - a description that fails still leaves a record
        text = f"{type(exc).__module__}.{type(exc).__qualname__} (its traceback failed)"
    return clean_text(text)


# --- process isolation ---------------------------------------------------------------------


def _child_main(
    path: str,
    payload: dict[str, Any],
    context_fields: dict[str, Any],
    token: str,
    conn: Connection,
) -> None:
    """Entry point of the child process: set Django up, run the job, send back the result."""
    import django

    django.setup()
    from ..executors.allow_list import resolve
    from ..executors.calling import AttemptContext, call
    from .uncertainty import marker

    context = AttemptContext(**context_fields, mark=marker(context_fields["attempt_id"], token))
    try:
        value = call(resolve(path), payload, context)
        conn.send(("ok", outcome_or_none(value), ""))
    except Permanent as exc:
        conn.send(("permanent", None, _describe(exc)))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as a failed try
        conn.send(("error", None, _describe(exc)))
    finally:
        conn.close()


def _died(exitcode: int | None) -> TryResult:
    """The child ended without sending a result: how far the job got is unknown."""
    return TryResult("error", error=f"child process exited with {exitcode}", outcome_known=False)


def _run_in_process(claim: Claim) -> TryResult:
    """Run in a fresh (spawned) process, killed if the try is cancelled or times out."""
    allow_list.check_allowed(claim.executor)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    context = claim.context()
    fields = {
        "attempt_id": context.attempt_id,
        "schedule_name": context.schedule_name,
        "occurrence_at": context.occurrence_at,
        "try_number": context.try_number,
        "idempotency_key": context.idempotency_key,
        "deadline": context.deadline,
    }
    process = ctx.Process(
        target=_child_main,
        args=(claim.executor, claim.payload, fields, claim.token, child),
        name=f"cadence-attempt-{claim.attempt_id}",
        daemon=True,
    )
    claim.in_job = True
    process.start()
    child.close()
    try:
        while True:
            if parent.poll(CHILD_POLL):
                kind, value, error = parent.recv()
                process.join(CHILD_EXIT_WAIT)
                return TryResult(kind, value, error)
            if not process.is_alive():
                return _died(process.exitcode)
            if claim.cancel_event.is_set():
                process.kill()
                process.join()
                return TryResult("error", error="child process killed: the try was cancelled")
    except EOFError:
        process.join(CHILD_EXIT_WAIT)
        return _died(process.exitcode)
    finally:
        if process.is_alive():
            process.kill()
            process.join(CHILD_EXIT_WAIT)
        claim.in_job = process.is_alive()
        parent.close()
