"""The runner as a detached child process: started, followed through its events file, stopped.

Detached so that closing the app can leave a sweep running; the app finds it again through the
database's `sweeps` table and follows the same events file.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QTimer, Signal

from workbench import paths


def draftbench_argv(*args: str) -> tuple[str, list[str]]:
    """The `draftbench` command line for a child process of the app."""
    # In the desktop bundle the executable is `draftbench` itself; otherwise it is Python.
    prefix = [] if getattr(sys, "frozen", False) else ["-m", "app"]
    return sys.executable, [*prefix, *args]


def runner_argv(plan_path: str, db_path: str, events_path: str, log_path: str,
                remote: str | None = None) -> tuple[str, list[str]]:
    # On a remote host the local process streams the host's events and rows here; Stop (SIGTERM)
    # stops the sweep there.
    where = ["--remote", remote] if remote else []
    return draftbench_argv("run", plan_path, "--db", db_path, "--events", events_path, "--log", log_path,
                           "--own-group", *where)


class EventsFile:
    """Follows a JSON-lines events file that another process appends to: each `read()` returns
    the events completed since the last one (a line still being written waits for its end)."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = 0
        self._buffer = b""

    def read(self) -> list[dict]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return []
        self._offset += len(chunk)
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        events = []
        for line in lines:
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return events


class Sweep(QObject):
    """One sweep being followed: emits each runner event as a dict."""

    event = Signal(dict)
    ended = Signal()

    def __init__(self, pid: int, events_path: Path, stderr_path: Path | None = None, parent=None):
        super().__init__(parent)
        self.pid = pid
        self.events_path = events_path
        self.stderr_path = stderr_path
        self.events = EventsFile(events_path)
        self._ended = False
        self.started = time.time()
        self.timer = QTimer(self, interval=200)
        self.timer.timeout.connect(self.poll)
        self.timer.start()

    @classmethod
    def start(cls, plan_path: str, db_path: str, parent=None, remote: str | None = None) -> "Sweep":
        folder = paths.data_dir() / "sweeps"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        events = folder / f"{stamp}-{os.getpid()}.events.jsonl"
        stderr = events.with_suffix("").with_suffix(".stderr.txt")
        events.touch()
        program, args = runner_argv(plan_path, db_path, str(events), str(stderr), remote)
        # Detached: the runner outlives the app if the user chooses to keep a sweep running.
        ok, pid = QProcess.startDetached(program, args, str(Path.cwd()))
        if not ok:
            raise OSError(f"could not start the runner ({program})")
        return cls(pid, events, stderr, parent)

    @property
    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        # A finished child of ours stays a zombie until reaped; that is not alive.
        try:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            return done == 0
        except ChildProcessError:
            return True

    def poll(self) -> None:
        events = self.events.read()
        for event in events:
            self.event.emit(event)
            if event.get("event") == "sweep_finished":
                self._finish()
        if not self._ended and not events and not self.alive:
            self._finish()

    def _finish(self) -> None:
        if not self._ended:
            self._ended = True
            self.timer.stop()
            self.ended.emit()

    def stderr_tail(self, n: int = 5) -> str:
        if not self.stderr_path or not self.stderr_path.exists():
            return ""
        return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-n:])

    def stop(self) -> None:
        """SIGTERM: the runner stops its server and marks the run in flight cancelled."""
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
