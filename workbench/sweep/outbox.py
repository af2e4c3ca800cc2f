"""One writer to the database while several servers are measured at once.

Each server's job sends what it would write (a Recorder call) and what it would emit (an event)
as messages; one writer thread applies them in the order they were sent, through its own
connection, and emits each event only after the rows sent before it are committed (a reader that
follows the events, the app or the remote agent, then always finds the rows an event names); once
a write has failed, it emits nothing more. A job on a Ray worker sends the same messages, streamed
back to the driver (workbench.sweep.cluster) as plain data (`encode`, `decode`).

A message is a typed record: one per Recorder operation a job may call (all write; none returns
anything the job needs), and `Emitted` for an event.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from workbench import events, store


class Message:
    """What a job sends to the writer; OP names it on the wire (`encode`)."""

    OP: ClassVar[str]


class Write(Message):
    """One Recorder operation, with its arguments."""

    def apply(self, record: store.Recorder) -> None:
        raise NotImplementedError




@dataclass(frozen=True)
class LogLines(Write):
    OP = "log_lines"
    run_id: int
    lines: list  # (time, stream, text) per server log line

    def apply(self, record: store.Recorder) -> None:
        record.log_lines(self.run_id, self.lines)


@dataclass(frozen=True)
class Telemetry(Write):
    OP = "telemetry"
    readings: list

    def apply(self, record: store.Recorder) -> None:
        record.telemetry(self.readings)


@dataclass(frozen=True)
class ServerCommand(Write):
    OP = "server_command"
    run_ids: list
    command: str
    vllm_args: list

    def apply(self, record: store.Recorder) -> None:
        record.server_command(self.run_ids, self.command, self.vllm_args)


@dataclass(frozen=True)
class ServerPlacement(Write):
    OP = "server_placement"
    run_ids: list
    gpus: list | None
    env: dict

    def apply(self, record: store.Recorder) -> None:
        record.server_placement(self.run_ids, self.gpus, self.env)


@dataclass(frozen=True)
class ServerEnvironment(Write):
    OP = "server_environment"
    run_ids: list
    environment: dict

    def apply(self, record: store.Recorder) -> None:
        record.server_environment(self.run_ids, self.environment)


@dataclass(frozen=True)
class ServerProvenance(Write):
    OP = "server_provenance"
    run_ids: list
    provenance: dict

    def apply(self, record: store.Recorder) -> None:
        record.server_provenance(self.run_ids, self.provenance)


@dataclass(frozen=True)
class RunStarted(Write):
    OP = "run_started"
    run_id: int

    def apply(self, record: store.Recorder) -> None:
        record.run_started(self.run_id)


@dataclass(frozen=True)
class PromptsSeen(Write):
    OP = "prompts_seen"
    run_id: int
    seen_before: bool
    warnings: list | None = None

    def apply(self, record: store.Recorder) -> None:
        record.prompts_seen(self.run_id, self.seen_before, self.warnings)


@dataclass(frozen=True)
class Sample(Write):
    OP = "sample"
    sweep_id: int
    sample: dict
    positions: list
    requests: list

    def apply(self, record: store.Recorder) -> None:
        record.sample(self.sweep_id, self.sample, self.positions, self.requests)


@dataclass(frozen=True)
class RunCompleted(Write):
    OP = "run_completed"
    run_id: int
    summary: dict

    def apply(self, record: store.Recorder) -> None:
        record.run_completed(self.run_id, self.summary)


@dataclass(frozen=True)
class RunPartial(Write):
    OP = "run_partial"
    run_id: int
    summary: dict
    error: str

    def apply(self, record: store.Recorder) -> None:
        record.run_partial(self.run_id, self.summary, self.error)


@dataclass(frozen=True)
class RunFailed(Write):
    OP = "run_failed"
    run_id: int
    error: str
    log_tail: str

    def apply(self, record: store.Recorder) -> None:
        record.run_failed(self.run_id, self.error, self.log_tail)


@dataclass(frozen=True)
class RunSkipped(Write):
    OP = "run_skipped"
    run_id: int
    reason: str

    def apply(self, record: store.Recorder) -> None:
        record.run_skipped(self.run_id, self.reason)


@dataclass(frozen=True)
class Heartbeat(Write):
    OP = "heartbeat"
    sweep_id: int
    t: float

    def apply(self, record: store.Recorder) -> None:
        record.heartbeat(self.sweep_id, self.t)


@dataclass(frozen=True)
class ResetRuns(Write):
    """Sent by the cluster driver, not a job: the runs of a lost worker, to be redone."""
    OP = "reset_runs"
    run_ids: list

    def apply(self, record: store.Recorder) -> None:
        record.reset_runs(self.run_ids)


@dataclass(frozen=True)
class Emitted(Message):
    """An event, emitted once every write sent before it is committed."""
    OP = "event"
    event: events.Event


WRITES: dict[str, type[Write]] = {cls.OP: cls for cls in Write.__subclasses__()}


def encode(message: Message) -> dict:
    """The message as plain data ({"op": OP, ...its fields}), for a process that may not share
    this one's classes (a Ray worker's batches)."""
    if isinstance(message, Emitted):
        return {"op": Emitted.OP, "event": message.event.to_json()}
    return {"op": message.OP, **{f.name: getattr(message, f.name) for f in dataclasses.fields(message)}}  # type: ignore[arg-type]  # every Write is a dataclass


def decode(obj: Any) -> Message:
    """The message of `encode`'s plain data; raises ValueError for anything else."""
    op = obj.get("op") if isinstance(obj, dict) else None
    if op == Emitted.OP:
        event = events.from_json(obj.get("event"))
        if event is None:
            raise ValueError("an event message without its event")
        return Emitted(event)
    cls = WRITES.get(op) if isinstance(op, str) else None
    if cls is None:
        raise ValueError(f"unknown write {op!r}")
    try:
        return cls(**{k: v for k, v in obj.items() if k != "op"})
    except TypeError as exc:
        raise ValueError(f"{op}: {exc}") from None


class Record:
    """The Recorder operations a server's job calls, each sent as its message."""

    def __init__(self, put: Callable[[Message], None]):
        self._put = put

    def log_lines(self, run_id: int, lines: list[tuple[float, str, str]]) -> None:
        self._put(LogLines(run_id, lines))

    def telemetry(self, readings: list[dict]) -> None:
        self._put(Telemetry(readings))

    def server_command(self, run_ids: list[int], command: str, vllm_args: list[str]) -> None:
        self._put(ServerCommand(run_ids, command, vllm_args))

    def server_placement(self, run_ids: list[int], gpus: list[int] | None, env: dict[str, str]) -> None:
        self._put(ServerPlacement(run_ids, gpus, env))

    def server_environment(self, run_ids: list[int], environment: dict) -> None:
        self._put(ServerEnvironment(run_ids, environment))

    def server_provenance(self, run_ids: list[int], provenance: dict) -> None:
        self._put(ServerProvenance(run_ids, provenance))

    def run_started(self, run_id: int) -> None:
        self._put(RunStarted(run_id))

    def prompts_seen(self, run_id: int, seen_before: bool, warnings: list[str] | None = None) -> None:
        self._put(PromptsSeen(run_id, seen_before, warnings))

    def sample(self, sweep_id: int, sample: dict, positions: list[dict], requests: list[dict]) -> None:
        self._put(Sample(sweep_id, sample, positions, requests))

    def run_completed(self, run_id: int, summary: dict) -> None:
        self._put(RunCompleted(run_id, summary))

    def run_partial(self, run_id: int, summary: dict, error: str) -> None:
        self._put(RunPartial(run_id, summary, error))

    def run_failed(self, run_id: int, error: str, log_tail: str) -> None:
        self._put(RunFailed(run_id, error, log_tail))

    def run_skipped(self, run_id: int, reason: str) -> None:
        self._put(RunSkipped(run_id, reason))

    def heartbeat(self, sweep_id: int, t: float) -> None:
        self._put(Heartbeat(sweep_id, t))

    def reset_runs(self, run_ids: list[int]) -> None:
        self._put(ResetRuns(run_ids))


class Sender:
    """What a job writes and emits, as messages into `put`: a Recorder-shaped object (`record`)
    and an Emit (`emit`)."""

    def __init__(self, put: Callable[[Message], None]):
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
        self.queue: queue.Queue[Message | None] = queue.Queue()
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

    def put(self, message: Message) -> None:
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


def apply(record: store.Recorder, emit: events.Emit, message: Message) -> None:
    if isinstance(message, Write):
        message.apply(record)
    elif isinstance(message, Emitted):
        emit(message.event)
    else:
        raise ValueError(f"not a message for the writer: {type(message).__name__}")
