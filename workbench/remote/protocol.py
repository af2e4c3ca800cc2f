"""The follow stream between the local side and the host's agent: one typed record per message.

The local side sends one `Resume` (where its mirror stands); the agent then sends `Rows` and
`Reset` for the database, `EventLine` for each line of the sweep's events file, a `Beat` every
few seconds, and `End` once the runner is gone and everything is sent. On the wire each is one
JSON object per line, {"k": KIND, ...} (workbench.messages writes and reads it); the short keys
are that wire format, read by hosts and laptops running other versions, so a field may be added
but never renamed. A line of a kind this version does not know decodes to None and is skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from workbench import messages


class StreamMessage(messages.Message):
    """A line of the follow stream; its kind is written under "k"."""

    TAG = "k"


@dataclass(frozen=True)
class Resume(StreamMessage):
    """Local to host: the highest host id the mirror holds per appended table, and per host run
    its row count and highest host id there (a run whose rows differ is sent again whole)."""
    KIND = "resume"
    cursors: dict[str, int] = field(default_factory=dict)    # table -> host id
    signature: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # table -> host run id (a string) -> [count, highest id]


@dataclass(frozen=True)
class Rows(StreamMessage):
    """Rows of one table as the host stores them (host ids, host foreign keys)."""
    KIND = "rows"
    table: str = field(metadata=messages.key("t"))
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class Reset(StreamMessage):
    """The host deleted one run's rows of a table (a rerun): the local copies go."""
    KIND = "reset"
    table: str = field(metadata=messages.key("t"))
    run: int


@dataclass(frozen=True)
class EventLine(StreamMessage):
    """One line of the sweep's events file, and the byte offset just past it (where a reconnect resumes)."""
    KIND = "ev"
    line: str
    offset: int = field(metadata=messages.key("off"))


@dataclass(frozen=True)
class Beat(StreamMessage):
    """The agent is alive; its clock."""
    KIND = "beat"
    t: float


@dataclass(frozen=True)
class End(StreamMessage):
    """The runner is gone and everything it wrote has been sent."""
    KIND = "end"


@dataclass(frozen=True)
class Stamp:
    """What the stream reads of a host row itself, None where its table has no such column: its
    host id, its run, its time and (a run's) status."""
    id: int | None = None  # the mirror hands its callers rows without it (local ids are its own)
    run_id: int | None = None
    t: float | None = None
    status: str | None = None


def encode(message: StreamMessage) -> str:
    """The message as its line on the wire (without the newline)."""
    if not isinstance(message, StreamMessage):
        raise TypeError(f"not a stream message: {type(message).__name__}")
    return messages.dumps(message)


def decode(line: str | bytes) -> StreamMessage | None:
    """The message of one line; None for a line that is not one (blank, cut, not JSON, a kind
    this version does not know, a known kind without its fields)."""
    try:
        obj: Any = json.loads(line)
    except ValueError:
        return None
    # Earlier versions sent the resume point without a kind ({} for an empty mirror).
    if isinstance(obj, dict) and "k" not in obj and ("cursors" in obj or not obj):
        obj = {**obj, "k": Resume.KIND}
    try:
        return messages.decode(obj, StreamMessage)
    except messages.MessageError:
        return None


def stamp(row: dict[str, Any]) -> Stamp:
    """The stamp of a host row (its other columns are not read); MessageError when a column it
    reads holds something else."""
    return messages.decode(row, Stamp)
