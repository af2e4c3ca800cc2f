"""A `draftbench` child process of the app (a sweep's runner, a training run): started in its own
session, followed through its events file, stopped with SIGTERM.

Its own session, so that closing the app can leave a sweep running and a terminal's Ctrl+C does
not reach it; the app, opened again, follows it by pid and events file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Self

from PySide6.QtCore import QObject, QTimer, Signal

from workbench import events
from workbench.usecases import children


# True in an app started as `draftbench --debug` (set by app.entry): its children are started with
# --debug too, so a sweep's runner or a training run that fails keeps its traceback in a file
# (workbench.cli.failure), named in the last line of its stderr.
debug = False


def draftbench_argv(*args: str) -> tuple[str, list[str]]:
    """The `draftbench` command line for a child process of the app (built by the usecases)."""
    return children.program(*args, debug=debug)


class Child(QObject):
    """Emits each event of the child as a typed record (`event_read`), then `ended` once it has
    exited (or sent one of the `final` kinds) and every event it wrote has been emitted."""

    # Not named `event`: that is QObject's handler of Qt's own events, which a signal would hide.
    event_read = Signal(object)
    ended = Signal()
    final: tuple[type[events.Event], ...] = ()

    def __init__(self, pid: int, events_path: Path, stderr_path: Path | None = None, parent: QObject | None = None,
                 proc: subprocess.Popen[bytes] | None = None) -> None:
        super().__init__(parent)
        self.pid = pid
        self.proc = proc  # None for a child an earlier run of the app started
        self.events_path = events_path
        self.stderr_path = stderr_path
        self.follower = events.Follower(events_path)
        self._ended = False
        self.timer = QTimer(self, interval=200)
        self.timer.timeout.connect(self.poll)
        self.timer.start()

    @classmethod
    def launch(cls, args: list[str], events_path: Path, stderr_path: Path, cwd: Path, parent: QObject | None = None,
               env: dict[str, str] | None = None) -> Self:
        """`draftbench ARGS` with its output going to `stderr_path`, `env` added to the app's own
        environment; raises OSError when it cannot start."""
        program, argv = draftbench_argv(*args)
        with open(stderr_path, "ab") as log:
            proc = children.start([program, *argv], stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=cwd,
                                 env={**os.environ, **env} if env else None)
        return cls(proc.pid, events_path, stderr_path, parent, proc)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None if self.proc is not None else children.alive(self.pid)

    @property
    def exit_code(self) -> int | None:
        """The exit status once it ended (None while it runs, and for a child an earlier run of the app started)."""
        return self.proc.poll() if self.proc is not None else None

    def poll(self) -> None:
        if self._ended:
            self._reap()
            return
        running = self.alive  # asked before reading, so the events it wrote before exiting are read
        for event in self.follower.read():
            self.event_read.emit(event)
            if isinstance(event, self.final):
                self._finish()
        if not running:
            self._finish()

    def _finish(self) -> None:
        if not self._ended:
            self._ended = True
            self.ended.emit()
        self._reap()

    def _reap(self) -> None:
        """The timer stops once the child's exit status is collected. Its final event comes just
        before it exits, so the timer keeps asking until then: a child left unasked would stay a
        zombie until the app quits."""
        if self.proc is None or self.proc.poll() is not None:
            self.timer.stop()

    def stop(self) -> None:
        """SIGTERM: the child stops what it runs (a server, a trainer), keeps what is finished, and exits."""
        if self.alive:  # once reaped, the pid may be another process's
            children.stop(self.pid)

    def wait(self, timeout_s: float) -> None:
        """Waits for a child this app started to exit, then emits what is left (its end included)."""
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self.poll()

    def stderr_tail(self, n: int = 5) -> str:
        if not self.stderr_path or not self.stderr_path.exists():
            return ""
        return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-n:])
