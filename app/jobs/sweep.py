"""The runner as a child process of the app: started, followed through its events file, stopped.

Closing the app can leave a sweep running; the app finds it again through the database's
`sweeps` table and follows the same events file.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from PySide6.QtCore import QObject

from app.jobs.child import Child
from workbench import events, paths, store
from workbench.usecases import children


class Sweep(Child):
    """One sweep being followed; it ends with its summary event, or when the runner is gone."""

    final = (events.SweepFinished,)

    def __init__(self, pid: int, events_path: Path, stderr_path: Path | None = None, parent: QObject | None = None,
                 proc: subprocess.Popen[bytes] | None = None) -> None:
        super().__init__(pid, events_path, stderr_path, parent, proc)
        self.end: events.SweepFinished | None = None  # its end event, once read
        self.event_read.connect(self._note_end)

    def _note_end(self, event: events.Event) -> None:
        if isinstance(event, events.SweepFinished):
            self.end = event

    def failure(self) -> str | None:
        """Why the sweep stopped, in one line; None when it ran to its end or was stopped.
        Its end event says it. A runner that stopped before its sweep began (a plan it refused, no
        vLLM) sends no end event: then its last stderr line, when that is an error."""
        if self.end is not None:
            return self.end.error
        last = self.stderr_tail(1).strip()
        if last.startswith("draftbench:") and not last.startswith("draftbench: warning:"):
            return last.removeprefix("draftbench:").strip()
        return None

    @classmethod
    def start(cls, plan_path: str, db_path: str, parent: QObject | None = None, remote: str | None = None,
              ray: str | None = None, again: bool = False, add_repeats: int = 0) -> "Sweep":
        """Raises OSError when the runner cannot be started."""
        folder = paths.data_dir() / "sweeps"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        events_path = folder / f"{stamp}-{os.getpid()}.events.jsonl"
        stderr = events_path.with_suffix("").with_suffix(".stderr.txt")
        events_path.touch()
        args = children.runner_args(plan_path, db_path, str(events_path), str(stderr), remote, ray, again, add_repeats)
        # The runner reads this process's CPU over every measurement window (workbench.sweep.app_cpu).
        return cls.launch(args, events_path, stderr, Path.cwd(), parent, env=children.runner_env())

    def close_row(self, db_path: Path) -> None:
        """Once the runner is gone: a runner that exited without closing its sweep row (killed, or
        crashed) leaves it open, read as a sweep in progress with its runs pending, so it is closed
        here. A runner that ended its sweep closed the row itself, before its final event."""
        if self.alive or not db_path.exists():  # never create a database the runner did not
            return
        try:
            db = store.open_db(db_path)
            try:
                store.sweep_exited(db, self.pid, str(self.events_path))
            finally:
                store.close(db)
        except (store.StoreError, store.DatabaseError):
            pass  # unusable or locked: the row stays, and reads as a stale sweep once its heartbeat is old
