"""The events a sweep, an adaptive sweep and a training run send: one typed record per kind.

On the wire each is one JSON object per line, {"event": KIND, ...fields}, to stdout or an events
file; the app, `draftbench run` and the remote stream read them back. The field names are that
wire format: files written by earlier versions and streams from a host running another version
must keep parsing, so a field may be added but never renamed. A field whose default is None is
optional and left out of the line while unset; the others are always written, null included.
"""

from __future__ import annotations

import enum
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, TextIO, TypeVar, dataclass_transform

from workbench import messages


class Kind(enum.StrEnum):
    SWEEP_STARTED = "sweep_started"
    SWEEP_FINISHED = "sweep_finished"
    SERVER_STARTING = "server_starting"
    SERVER_READY = "server_ready"
    RUN_STARTED = "run_started"
    RUN_FINISHED = "run_finished"
    RUN_FAILED = "run_failed"
    ALARM = "alarm"
    PROGRESS = "progress"
    ADAPTIVE_STARTED = "adaptive_started"
    PREDICTION = "prediction"
    RECOMMENDATION = "recommendation"
    STEP_STARTED = "step_started"
    STEP_SKIPPED = "step_skipped"
    STEP_FINISHED = "step_finished"
    REUSED = "reused"
    TRAIN_STEP = "train_step"
    VALIDATION = "validation"
    DONE = "done"


def _rest() -> Any:
    # The fields a kind carries beyond its named ones (a step's own figures), flat on the wire.
    return field(default_factory=dict, metadata=messages.REST)


class Event(messages.Message):
    """A typed record; KIND names its kind (None for a kind this version does not know)."""

    TAG = "event"
    KIND: ClassVar[Kind | None] = None

    def to_json(self) -> dict[str, Any]:
        return messages.encode(self)


_T = TypeVar("_T")


# dataclass(frozen=True, kw_only=True) under a name, spelled so that type checkers see the fields.
@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def _record(cls: type[_T]) -> type[_T]:
    return dataclass(frozen=True, kw_only=True)(cls)


# -- sweeps (workbench.sweep.runner) ------------------------------------------------------------------
@_record
class SweepStarted(Event):
    KIND = Kind.SWEEP_STARTED
    experiment: int
    db: str
    runs: int
    pending: int
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@_record
class SweepFinished(Event):
    """The sweep's summary; an interrupted sweep sends `cancelled` alone, and one stopped by an
    error (the database refusing a write) its experiment, seconds and `error`, one line saying why."""
    KIND = Kind.SWEEP_FINISHED
    experiment: int | None = None
    seconds: float | None = None
    completed: int | None = None
    failed: int | None = None
    cancelled: bool = False
    error: str | None = None
    launches: int | None = None          # adaptive sweeps: servers started
    recommendations: list[dict[str, Any]] | None = None  # adaptive sweeps: each context's Recommendation, as JSON
    note: str | None = None              # one line about runs the sweep chose not to start, and why


@_record
class ServerStarting(Event):
    KIND = Kind.SERVER_STARTING
    run: int | None = None   # the first run it serves (sweeps; training has no runs)
    command: str
    kind: str | None = None  # how it is launched: local, docker, attach
    slot: int | None = None  # a parallel sweep: the GPU slot it runs on, and that slot's GPUs
    gpus: list[int] | None = None
    index: int | None = None    # this server is the index-th of `servers` the sweep starts
    servers: int | None = None


@_record
class ServerReady(Event):
    KIND = Kind.SERVER_READY
    seconds: float
    port: int
    slot: int | None = None


@_record
class RunStarted(Event):
    KIND = Kind.RUN_STARTED
    run: int
    label: str
    index: int
    total: int
    slot: int | None = None
    gpus: list[int] | None = None


@_record
class RunFinished(Event):
    KIND = Kind.RUN_FINISHED
    run: int
    label: str
    output_tok_s: float | None
    mal: float | None
    acceptance_rate: float | None


@_record
class RunFailed(Event):
    KIND = Kind.RUN_FAILED
    run: int
    error: str


@_record
class Alarm(Event):
    """Something in a finished run's counters that says its MAL should not be trusted as it stands
    (workbench.analysis.alarms: `kind` is collapsed, mal_drop or overcount); sent before its RunFinished."""
    KIND = Kind.ALARM
    run: int
    kind: str
    message: str


@_record
class Progress(Event):
    """Work done of a total: a sweep's run (`run`, with its figures so far) or a training step (`step`)."""
    KIND = Kind.PROGRESS
    run: int | None = None
    step: str | None = None
    done: int
    total: int
    t: float | None = None
    output_tok_s: float | None = None
    mal: float | None = None


# -- adaptive sweeps (workbench.sweep.adaptive) ---------------------------------------------------------
@_record
class AdaptiveStarted(Event):
    KIND = Kind.ADAPTIVE_STARTED
    contexts: int
    probes: dict[str, list[int]]  # context label -> the Ns measured first


@_record
class Prediction(Event):
    """A context's speedup curve from what is measured so far, and the N it runs next (none: done);
    `error` instead when no prediction can be made."""
    KIND = Kind.PREDICTION
    context: str
    error: str | None = None
    best_n: int | None = None
    uncertain: bool | None = None
    runner_up: int | None = None
    measured_n: list[int] | None = None
    next_n: list[int] = field(default_factory=list)
    curve: list[list[int | float]] | None = None  # [N, speedup, half width] per N; N stays an integer on the wire

    def summary(self) -> str:
        if self.error:
            return f"{self.context}: no prediction ({self.error})"
        nxt = f"; next N = {', '.join(map(str, self.next_n))}" if self.next_n else "; confirmed"
        close = f" (N={self.runner_up} within noise)" if self.uncertain and self.runner_up is not None else ""
        return f"{self.context}: predicted best N = {self.best_n}{close}{nxt}"


@_record
class Recommendation(Event):
    KIND = Kind.RECOMMENDATION
    context: str
    message: str
    runs_used: int
    runs_total: int
    best_n: int | None = None
    predicted_speedup: float | None = None
    predicted_half_width: float | None = None
    measured_speedup: float | None = None
    uncertain: bool | None = None


# -- training (workbench.train) ---------------------------------------------------------------------------
@_record
class StepStarted(Event):
    KIND = Kind.STEP_STARTED
    step: str


@_record
class StepSkipped(Event):
    KIND = Kind.STEP_SKIPPED
    step: str


@_record
class StepFinished(Event):
    KIND = Kind.STEP_FINISHED
    step: str
    info: dict[str, Any] = _rest()  # what the step recorded in the manifest (counts, seconds, paths)


@_record
class Reused(Event):
    KIND = Kind.REUSED
    source: str
    steps: list[str]


@_record
class TrainStep(Event):
    KIND = Kind.TRAIN_STEP
    step: int | None
    epoch: int | None
    loss: float | None
    metrics: dict[str, Any]


@_record
class Validation(Event):
    KIND = Kind.VALIDATION
    epoch: int | None
    loss: float | None
    metrics: dict[str, Any]


@_record
class Done(Event):
    KIND = Kind.DONE
    out: str
    checkpoint: str
    pair: str
    plan: str


@dataclass(frozen=True)
class Other(Event):
    """A kind this version does not know (a newer runner's), or a known kind that lacks a field:
    kept whole, so it can be passed on, and ignored by every consumer. Its kind is its `event`
    field, written under the same key the known kinds are."""
    event: str
    fields: dict[str, Any] = field(default_factory=dict, metadata=messages.REST)


RECORDS: dict[str, type[Event]] = {k: c for k, c in Event.KINDS.items() if issubclass(c, Event)}
Emit = Callable[[Event], None]


def from_json(obj: Any) -> Event | None:
    """The record of one decoded JSON value, or None when it is not an event."""
    if not isinstance(obj, dict) or not isinstance(obj.get("event"), str):
        return None
    try:
        return messages.decode(obj, Event)
    except messages.MessageError:
        return Other(obj["event"], {k: v for k, v in obj.items() if k != "event"})


def parse(line: str | bytes) -> Event | None:
    """The record of one line, or None for a line that is not an event (blank, cut, not JSON)."""
    try:
        return from_json(json.loads(line))
    except ValueError:  # also a line that is not UTF-8
        return None


def dumps(event: Event) -> str:
    return messages.dumps(event)


class Writer:
    """Events as JSON lines, each flushed at once so a follower sees it: to a text stream, to a
    file (appended), or to stdout (looked up at each write, so a redirected sys.stdout is used).
    A Writer is an Emit."""

    def __init__(self, stream: TextIO | None = None):
        self._stream = stream

    @classmethod
    def append_to(cls, path: str | Path) -> "Writer":
        """Raises OSError when the file cannot be opened for appending."""
        return cls(open(path, "a", encoding="utf-8", buffering=1))

    def __call__(self, event: Event) -> None:
        stream = self._stream or sys.stdout
        stream.write(dumps(event) + "\n")
        stream.flush()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()


class Follower:
    """Tails a JSON-lines file another process appends to: each call returns what was completed
    since the previous one. A line still being written (no newline yet) waits for its end, a
    damaged line is skipped, and a file that does not exist yet reads as empty."""

    def __init__(self, path: str | Path, offset: int = 0):
        self.path = Path(path)
        self.offset = offset  # bytes consumed, up to the end of the last complete line
        self._partial = b""

    def lines(self) -> list[bytes]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset + len(self._partial))
                chunk = f.read()
        except OSError:
            return []
        *complete, self._partial = (self._partial + chunk).split(b"\n")
        self.offset += sum(len(line) + 1 for line in complete)
        return [line for line in complete if line.strip()]

    def objects(self) -> list[dict[str, Any]]:
        """The JSON objects of the new lines (for files of records that are not events)."""
        out = []
        for line in self.lines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out

    def read(self) -> list[Event]:
        """The events of the new lines."""
        return [e for e in map(from_json, self.objects()) if e is not None]


def read_objects(path: str | Path) -> list[dict[str, Any]]:
    """Every JSON object of a JSON-lines file (none when it does not exist); a line cut by a
    crash is skipped."""
    return Follower(path).objects()
