"""Following a remote sweep over SSH: its events out, its rows mirrored into the local database,
reconnecting when the link drops."""

from __future__ import annotations

import statistics
import subprocess
import threading
import time
from dataclasses import replace
from typing import Any, Callable, TextIO

from workbench import events, messages, store
from workbench.remote import protocol
from workbench.remote.control import Launched, source_of
from workbench.remote.host import RemoteError, RemoteHost

# Rows committed to the local copy: their table, the rows, and when (time.time()).
OnRows = Callable[[str, list[store.TableRow], float], None]


class Stream:
    """Follows a remote sweep: events out to `events_out`, rows into the local database; the SSH
    connection is re-established (with backoff) when it drops, resuming where the mirror stands."""

    def __init__(self, host: RemoteHost, launched: Launched, local_db: store.Database,
                 events_out: TextIO, on_rows: OnRows | None = None,
                 on_status: Callable[[str], None] | None = None, retry_for_s: float = 600.0) -> None:
        self.host = host
        self.launched = launched
        self.mirror = store.Mirror(local_db, source_of(host, launched.db))
        self.events_out = events_out
        self.offset = 0
        self.on_status = on_status or (lambda s: None)
        self.retry_for_s = retry_for_s
        self.proc: subprocess.Popen[str] | None = None
        self._started: dict[int, float] = {}
        self.lags: dict[str, list[float]] = {}  # per table: seconds from a row's time on the host to its commit here
        self.mirror.on_rows = self._rows(on_rows)
        self.connections = 0
        self.stopped = False
        self.error: str | None = None  # why the host's sweep stopped, from its end event

    def _rows(self, then: OnRows | None) -> OnRows:
        def on_rows(table: str, rows: list[dict[str, Any]], now: float) -> None:
            if table in ("samples", "positions", "telemetry", "logs"):
                lags = [now - at for at in (self._epoch(table, row) for row in rows) if at is not None]
                if lags:
                    self.lags.setdefault(table, []).extend(lags)
            if then:
                then(table, rows, now)
        return on_rows

    def _epoch(self, table: str, row: dict[str, Any]) -> float | None:
        """When a streamed row was written on the host (None: the row does not say)."""
        try:
            head = protocol.stamp(row)
        except messages.MessageError:
            return None
        if not head.t:
            return None
        if table not in ("samples", "positions"):
            return head.t
        # Their t counts from the start of the measurement, which follows the run's `started`
        # by the initial scrape: the lag derived from it is an upper bound.
        if head.run_id is None:
            return None
        started = self._started.get(head.run_id)
        if started is None:
            found = store.run(self.mirror.db, head.run_id)
            started = self._started[head.run_id] = (found.started if found else None) or 0.0
        return started + head.t

    def lag_summary(self) -> str:
        """Clocks of both ends are compared as they are: on different hosts, keep them in sync (NTP)."""
        parts = []
        for table, lags in sorted(self.lags.items()):
            lags = sorted(lags)
            parts.append(f"{table} {len(lags)} rows p50 {statistics.median(lags) * 1000:.0f} ms "
                         f"p90 {lags[int(0.9 * (len(lags) - 1))] * 1000:.0f} ms max {lags[-1] * 1000:.0f} ms")
        return (f"lag from a row's time on the host to the local database over {self.connections} "
                f"connection(s): " + ("; ".join(parts) or "no timed rows streamed"))

    def local_event(self, line: str) -> str:
        """The event with the host's run and experiment ids replaced by the local ones, so the Live
        page finds the rows it names. A line that is not an event is passed on as it came."""
        event = events.parse(line)
        if event is None:
            return line
        if isinstance(event, events.SweepFinished) and event.error:
            self.error = event.error
        local = {}
        for name, table in (("run", "runs"), ("experiment", "experiments")):
            host_id = getattr(event, name, None) if not isinstance(event, events.Other) else event.fields.get(name)
            if isinstance(host_id, int):
                local[name] = self.mirror.ids[table].get(host_id, host_id)
        if isinstance(event, events.Other):
            event = replace(event, fields={**event.fields, **local})
        elif local:
            event = replace(event, **local)
        return events.dumps(event)

    def _connect_once(self) -> bool:
        """One SSH connection's worth of streaming; True once the host said the sweep ended."""
        argv = self.host.ssh_argv(self.host.agent_argv(
            "follow", "--db", self.launched.db, "--events", self.launched.events,
            "--offset", str(self.offset), "--pid", str(self.launched.pid)))
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr  # all three piped
        self.connections += 1
        errors: list[str] = []
        stderr = self.proc.stderr
        reader = threading.Thread(target=lambda: errors.extend(stderr), daemon=True)
        reader.start()
        state = self.mirror.state()
        self.proc.stdin.write(protocol.encode(protocol.Resume(state.cursors, state.signature)) + "\n")
        self.proc.stdin.close()
        ended = False
        self.heard = False
        for line in self.proc.stdout:
            self.heard = True
            ended = self.receive(protocol.decode(line)) or ended
        code = self.proc.wait()
        reader.join(timeout=2)
        if not ended and not self.stopped:
            self.last_error = self.host.explain(code, "".join(errors)) if code else "the stream ended early"
        return ended

    def receive(self, message: protocol.StreamMessage | None) -> bool:
        """Applies one message of the agent's (None: a line that was not one); True once it says
        everything is sent. Raises RemoteError when the local database refuses rows."""
        match message:
            case protocol.EventLine(text, offset):
                self.events_out.write(self.local_event(text) + "\n")
                self.events_out.flush()
                self.offset = offset
            case protocol.Rows(table, rows):
                self._store(table, lambda: self.mirror.apply_rows(table, rows))
            case protocol.Reset(table, run):
                self._store(table, lambda: self.mirror.reset_run(table, run))
            case protocol.End():
                return True
        return False

    def _store(self, table: str, write: Callable[[], None]) -> None:
        try:
            write()
        except store.DatabaseError as exc:
            self.stop()
            raise RemoteError(f"the local database refused rows of {table} from {self.host.label}: {exc}") from None

    def run(self) -> None:
        deadline = time.time() + self.retry_for_s
        backoff = 0.5
        while not self.stopped:
            if self._connect_once():
                return
            if self.stopped:
                return
            if self.heard:  # the link worked for a while: a fresh allowance for this drop
                deadline, backoff = time.time() + self.retry_for_s, 0.5
            if time.time() > deadline:
                raise RemoteError(f"lost {self.host.label} and could not reconnect: {self.last_error}")
            self.on_status(f"connection to {self.host.label} lost ({self.last_error}); reconnecting")
            time.sleep(backoff)
            backoff = min(backoff * 2, 10.0)

    def cut(self) -> None:
        """Kill the SSH client (the remote sweep goes on); `run` reconnects."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()

    def stop(self) -> None:
        self.stopped = True
        self.cut()
