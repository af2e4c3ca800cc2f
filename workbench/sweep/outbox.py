"""One writer to the database while several servers are measured at once.

Each server's job sends what it would write (a Recorder call) and what it would emit (an event)
as messages; one writer thread applies them in the order they were sent, through its own
connection, and emits each event only after the rows sent before it are committed (a reader that
follows the events, the app or the remote agent, then always finds the rows an event names); once
a write has failed, it emits nothing more. A job on a Ray worker sends the same messages, streamed
back to the driver (workbench.sweep.cluster).
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

from workbench import events, store

# The Recorder methods a server's job calls (all write; none returns anything the job needs), and
# the one the cluster driver adds when a worker is lost.
JOB_WRITES = frozenset({
    "log_lines", "telemetry", "server_command", "server_placement", "server_environment", "server_provenance",
    "run_started",
    "prompts_seen", "sample", "run_completed", "run_partial", "run_failed", "heartbeat", "reset_runs",
})
_END = ("end",)


class Sender:
    """What a job writes and emits, as messages into `put`: a Recorder-shaped object (`record`)
    and an Emit (`emit`)."""

    def __init__(self, put: Callable[[tuple], None]):
        self._put = put
        self.record = _RecordProxy(put)

    def emit(self, event: events.Event) -> None:
        self._put(("ev", event.to_json()))


class _RecordProxy:
    def __init__(self, put: Callable[[tuple], None]):
        self._put = put

    def __getattr__(self, name: str):
        if name not in JOB_WRITES:
            raise AttributeError(f"a server's job does not write {name!r}")

        def call(*args, **kwargs) -> None:
            self._put(("rec", name, args, kwargs))

        return call


class Writer:
    """The one writer: applies messages from its queue to the database at `db_path`."""

    def __init__(self, db_path: str, emit: events.Emit):
        self.db_path = db_path
        self.emit = emit
        self.queue: queue.Queue = queue.Queue()
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

    def put(self, message: tuple) -> None:
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
                if message == _END:
                    return
                if self.error and message[0] == "ev":
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
            self.queue.put(_END)
            self._thread.join()
        if self.error:
            raise self.error


def apply(record: store.Recorder, emit: events.Emit, message: tuple) -> None:
    kind = message[0]
    if kind == "rec":
        _, name, args, kwargs = message
        if name not in JOB_WRITES:
            raise ValueError(f"unknown write {name!r}")
        getattr(record, name)(*args, **kwargs)
    elif kind == "ev":
        event = events.from_json(message[1])
        if event is not None:
            emit(event)
