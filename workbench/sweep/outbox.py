"""One writer to the database while several servers are measured at once.

Each server's job sends what it would write (a Recorder call) and what it would emit (an event)
as messages; one writer thread applies them in the order they were sent, through its own
connection, and emits each event only after the rows sent before it are committed (a reader that
follows the events, the app or the remote agent, then always finds the rows an event names); once
a write has failed, it emits nothing more. A job on a Ray worker sends the same messages, streamed
back to the driver (workbench.sweep.cluster) as plain data (`encode`, `decode`: workbench.messages).

A message is a typed record: one per Recorder operation a job may call, its kind the operation's
name and its fields the operation's parameters (all write; none returns anything the job needs),
and `Emitted` for an event. A job calls them as it would call the Recorder (`Record`).
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

from workbench import events, messages, store
from workbench.sweep.rows import PositionRow, RunSummary, SampleRow


class WriterMessage(messages.Message):
    """What a job sends to the writer; its kind is written under "op"."""

    TAG = "op"


class Write(WriterMessage):
    """One Recorder operation, with its arguments: the operation named by KIND, each field one of
    its parameters by name, a typed row handed over as its columns."""

    def apply(self, record: store.Recorder) -> None:
        operation = getattr(record, str(self.KIND))
        operation(**{f.name: _stored(getattr(self, f.name)) for f in dataclasses.fields(self)})


def _stored(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return messages.encode(value)
    if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
        return [messages.encode(v) for v in value]
    return value


@dataclass(frozen=True)
class LogLines(Write):
    KIND = "log_lines"
    run_id: int
    lines: list[tuple[float, str, str]]  # (time, stream, text) per server log line


@dataclass(frozen=True)
class Telemetry(Write):
    KIND = "telemetry"
    readings: list[dict[str, Any]]


@dataclass(frozen=True)
class ServerCommand(Write):
    KIND = "server_command"
    run_ids: list[int]
    command: str
    vllm_args: list[str]


@dataclass(frozen=True)
class ServerPlacement(Write):
    KIND = "server_placement"
    run_ids: list[int]
    gpus: list[int] | None
    env: dict[str, str]


@dataclass(frozen=True)
class ServerEnvironment(Write):
    KIND = "server_environment"
    run_ids: list[int]
    environment: dict[str, Any]


@dataclass(frozen=True)
class ServerProvenance(Write):
    KIND = "server_provenance"
    run_ids: list[int]
    provenance: dict[str, Any]


@dataclass(frozen=True)
class RunStarted(Write):
    KIND = "run_started"
    run_id: int


@dataclass(frozen=True)
class PromptsSeen(Write):
    KIND = "prompts_seen"
    run_id: int
    seen_before: bool
    warnings: list[str] | None = None


@dataclass(frozen=True)
class Sample(Write):
    KIND = "sample"
    sweep_id: int
    sample: SampleRow
    positions: list[PositionRow]
    requests: list[dict[str, Any]]  # the requests finished since the last scrape (workbench.load's rows)


@dataclass(frozen=True)
class RunCompleted(Write):
    KIND = "run_completed"
    run_id: int
    summary: RunSummary


@dataclass(frozen=True)
class RunPartial(Write):
    KIND = "run_partial"
    run_id: int
    summary: RunSummary
    error: str


@dataclass(frozen=True)
class RunFailed(Write):
    KIND = "run_failed"
    run_id: int
    error: str
    log_tail: str


@dataclass(frozen=True)
class RunSkipped(Write):
    KIND = "run_skipped"
    run_id: int
    reason: str


@dataclass(frozen=True)
class Heartbeat(Write):
    KIND = "heartbeat"
    sweep_id: int
    t: float


@dataclass(frozen=True)
class ResetRuns(Write):
    """Sent by the cluster driver, not a job: the runs of a lost worker, to be redone."""
    KIND = "reset_runs"
    run_ids: list[int]


@dataclass(frozen=True)
class Emitted(WriterMessage):
    """An event, emitted once every write sent before it is committed."""
    KIND = "event"
    event: events.Event


WRITES: dict[str, type[Write]] = {k: c for k, c in WriterMessage.KINDS.items() if issubclass(c, Write)}


def encode(message: WriterMessage) -> dict[str, Any]:
    """The message as plain data ({"op": KIND, ...its fields}), for a process that may not share
    this one's classes (a Ray worker's batches)."""
    return messages.encode(message)


def decode(obj: Any) -> WriterMessage:
    """The message of `encode`'s plain data; raises ValueError (MessageError) for anything else."""
    return messages.decode(obj, WriterMessage)


class Record:
    """The Recorder's writes as a job calls them, each sent as its message: `record.run_started(7)`
    sends RunStarted(7). Only the operations in WRITES exist here."""

    def __init__(self, put: Callable[[WriterMessage], None]):
        self._put = put

    def __getattr__(self, operation: str) -> Callable[..., None]:
        cls = WRITES.get(operation)
        if cls is None:
            raise AttributeError(f"{operation!r} is not a write a job sends")
        put = self._put
        return lambda *args, **kwargs: put(cls(*args, **kwargs))


class Sender:
    """What a job writes and emits, as messages into `put`: a Recorder-shaped object (`record`)
    and an Emit (`emit`)."""

    def __init__(self, put: Callable[[WriterMessage], None]):
        self._put = put
        self.record = Record(put)

    def emit(self, event: events.Event) -> None:
        self._put(Emitted(event))


class Writer:
    """The one writer: applies messages from its queue to the database at `db_path`."""

    def __init__(self, db_path: str, emit: events.Emit):
        self.db_path = db_path
        self.emit = emit
        # None, after the messages, stops the thread.
        self.queue: queue.Queue[WriterMessage | None] = queue.Queue()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, daemon=True, name="db-writer")
        self._ready = threading.Event()

    def sender(self) -> Sender:
        return Sender(self.queue.put)

    def start(self) -> "Writer":
        self._thread.start()
        self._ready.wait()
        if self.error:
            raise self.error
        return self

    def put(self, message: WriterMessage) -> None:
        self.queue.put(message)

    def _loop(self) -> None:
        try:
            # Its own connection: SQLite connections belong to the thread that opened them.
            db = store.open_db(self.db_path)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that started it
            self.error = exc
            self._ready.set()
            return
        self._ready.set()
        record = store.Recorder(db)
        try:
            while True:
                message = self.queue.get()
                if message is None:
                    return
                if self.error and isinstance(message, Emitted):
                    # After a failed write no event goes out: it could name rows that were not
                    # stored (a run announced as finished whose completion hit a full disk).
                    continue
                try:
                    apply(record, self.emit, message)
                except Exception as exc:  # noqa: BLE001 - the first failure ends the sweep, below
                    self.error = self.error or exc
        finally:
            store.close(db)

    def close(self) -> None:
        """Applies everything sent so far, then stops; raises the first write that failed."""
        if self._thread.is_alive():
            self.queue.put(None)
            self._thread.join()
        if self.error:
            raise self.error


def apply(record: store.Recorder, emit: events.Emit, message: WriterMessage) -> None:
    if isinstance(message, Write):
        message.apply(record)
    elif isinstance(message, Emitted):
        emit(message.event)
    else:
        raise ValueError(f"not a message for the writer: {type(message).__name__}")
