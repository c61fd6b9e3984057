"""The ``CADENCE_SCHEDULES`` block ``cadence_import --settings-block`` prints, to paste.

Its texts come from another scheduler's rows, which anyone with that scheduler's admin can
edit, and the block is pasted into settings.py. So each text is written where it cannot leave
its place: a comment has every character that is not printable escaped (line ends among
them), so it stays one comment line; a name or a value is written as a Python literal that
evaluates back to it, or the entry is left out, saying so. Executed, the block runs one
assignment, which keeps the ``CADENCE_SCHEDULES`` above it and adds the imported schedules.
"""

from __future__ import annotations

import ast
import math
import pprint
from typing import TYPE_CHECKING, Any

from ..declarations import START_PAUSED

if TYPE_CHECKING:
    from .plan import Entry, ImportPlan

MERGE = '**globals().get("CADENCE_SCHEDULES", {}),'


class NotALiteral(ValueError):
    """A value that no plain Python literal writes."""


def escaped(text: object) -> str:
    """``text`` on one line of printable characters: the rest as ``\\n``, ``\\u2028``, ..."""
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in str(text)
    )


def comment(text: object) -> str:
    return f"# {escaped(text)}"


def literal(value: Any) -> str:
    """``value`` as a Python literal (it may span lines inside its brackets)."""
    _check_plain(value)
    shown = pprint.pformat(value, width=80, sort_dicts=False)
    if ast.literal_eval(shown) != value:
        raise NotALiteral(f"{type(value).__name__} does not read back as written")
    return shown


def _check_plain(value: Any) -> None:
    """Only the types a JSON payload and the declaration fields hold, nothing that subclasses."""
    kind = type(value)
    if value is None or kind in (str, bool, int):
        return
    if kind is float:
        if not math.isfinite(value):
            raise NotALiteral(f"{value!r} has no literal")
        return
    if kind in (list, tuple):
        for item in value:
            _check_plain(item)
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise NotALiteral(f"a key of type {type(key).__name__}")
            _check_plain(item)
        return
    raise NotALiteral(f"a value of type {kind.__name__}")


def render(plan: ImportPlan, *, paused_reason: str = "") -> str:
    """The block: each importable schedule declared, the rest named in comments below it."""
    lines = [
        comment(f"Imported from {plan.source} by cadence_import. Paste it below any"),
        "# CADENCE_SCHEDULES of the settings: it keeps those and adds these.",
        "CADENCE_SCHEDULES = {",
        f"    {MERGE}",
    ]
    left_out: list[str] = []
    for entry in plan.entries:
        if entry.declared_in:
            left_out.append(
                comment(
                    f"Left out: {entry.found.name} is declared already, in {entry.declared_in}."
                )
            )
            continue
        try:
            lines.extend(_declaration(entry, paused_reason))
        except NotALiteral as exc:
            left_out.append(comment(f"Not imported: {entry.found.name}: {exc}."))
    lines.append("}")
    lines.extend(left_out)
    lines.extend(comment(f"Not imported: {r.name}: {r.reason}") for r in plan.refused)
    return "\n".join([*lines, ""])


def _declaration(entry: Entry, paused_reason: str) -> list[str]:
    found = entry.found
    fields = dict(found.fields)
    reason = found.paused_reason or paused_reason
    if reason:
        fields[START_PAUSED] = reason
    lines = [f"    {comment(note)}" for note in found.notes]
    if entry.action == "differs":
        changed = ", ".join(name for name, _ours, _theirs in entry.differences)
        lines.append(f"    {comment(f'A schedule of this name differs here ({changed}).')}")
        lines.append("    # Declared, cadence_sync makes it this.")
    lines.append(f"    {literal(found.name)}: {{")
    lines.extend(f"        {literal(key)}: {literal(value)}," for key, value in fields.items())
    lines.append("    },")
    return lines
