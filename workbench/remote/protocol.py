"""The follow stream between the local side and the host's agent: one typed record per message.

The local side sends one `Resume` (where its mirror stands); the agent then sends `Rows` and
`Reset` for the database, `EventLine` for each line of the sweep's events file, a `Beat` every
few seconds, and `End` once the runner is gone and everything is sent. On the wire each is one
JSON object per line, {"k": KIND, ...}; the short keys are that wire format, read by hosts and
laptops running other versions, so a field may be added but never renamed. A line of a kind this
version does not know decodes to None and is skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Resume:
    """Local to host: the highest host id the mirror holds per appended table, and per host run
    its row count and highest host id there (a run whose rows differ is sent again whole)."""
    cursors: dict = field(default_factory=dict)    # table -> host id
    signature: dict = field(default_factory=dict)  # table -> host run id (a string) -> [count, highest id]


@dataclass(frozen=True)
class Rows:
    """Rows of one table as the host stores them (host ids, host foreign keys)."""
    table: str
    rows: list


@dataclass(frozen=True)
class Reset:
    """The host deleted one run's rows of a table (a rerun): the local copies go."""
    table: str
    run: int


@dataclass(frozen=True)
class EventLine:
    """One line of the sweep's events file, and the byte offset just past it (where a reconnect resumes)."""
    line: str
    offset: int


@dataclass(frozen=True)
class Beat:
    """The agent is alive; its clock."""
    t: float


@dataclass(frozen=True)
class End:
    """The runner is gone and everything it wrote has been sent."""


Message = Resume | Rows | Reset | EventLine | Beat | End


def encode(message: Message) -> str:
    """The message as its line on the wire (without the newline)."""
    match message:
        case Resume(cursors, signature):
            obj: dict = {"k": "resume", "cursors": cursors, "signature": signature}
        case Rows(table, rows):
            obj = {"k": "rows", "t": table, "rows": rows}
        case Reset(table, run):
            obj = {"k": "reset", "t": table, "run": run}
        case EventLine(line, offset):
            obj = {"k": "ev", "line": line, "off": offset}
        case Beat(t):
            obj = {"k": "beat", "t": t}
        case End():
            obj = {"k": "end"}
        case _:
            raise TypeError(f"not a stream message: {type(message).__name__}")
    return json.dumps(obj, separators=(",", ":"))


def decode(line: str | bytes) -> Message | None:
    """The message of one line; None for a line that is not one (blank, cut, not JSON, a kind
    this version does not know, a known kind without its fields)."""
    try:
        obj: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    # Earlier versions sent the resume point without a kind ({} for an empty mirror).
    kind = obj.get("k", "resume" if "cursors" in obj or not obj else None)
    try:
        match kind:
            case "rows":
                return Rows(_text(obj["t"]), _list(obj["rows"]))
            case "reset":
                return Reset(_text(obj["t"]), _int(obj["run"]))
            case "ev":
                return EventLine(_text(obj["line"]), _int(obj["off"]))
            case "beat":
                return Beat(float(obj["t"]))
            case "end":
                return End()
            case "resume":
                return Resume(_dict(obj.get("cursors", {})), _dict(obj.get("signature", {})))
    except (KeyError, TypeError, ValueError):
        return None
    return None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("not an integer")
    return value


def _list(value: Any) -> list:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return value


def _dict(value: Any) -> dict:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return value
