"""What the command line says when a command fails: one line on stderr, never a traceback. With
--debug the full traceback is kept in a file under the data directory's logs folder, and the line
names that file, so a user can send it without rerunning under a debugger."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path

from workbench import __version__, paths
from workbench.errors import DraftbenchError

HINT = "rerun as `draftbench --debug ...` to keep the traceback in a file"


def describe(exc: BaseException) -> tuple[str, int]:
    """The one line that says what went wrong, and the exit status: 2 for an error Draftbench
    raises on purpose (bad input, an unusable file), 130 for an interrupt, 1 for anything else,
    which is a bug."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", 130
    if isinstance(exc, DraftbenchError):
        return str(exc) or type(exc).__name__, 2
    # Deferred: the store (and sqlite_utils) loads only with the verbs that open a database, the
    # only ones that can fail with a database error: a file that opened but fails later (damaged
    # pages, a full disk, another writer's lock).
    from workbench import store

    if isinstance(exc, store.DatabaseError):
        return f"the results database cannot be used: {store.explain(exc)}", 2
    message = " ".join(str(exc).split())  # a message over several lines would break the one line
    return f"unexpected error, {type(exc).__name__}{': ' + message if message else ''}", 1


def traceback_text(exc: BaseException, argv: list[str]) -> str:
    """The command, the version and the full traceback. An error raised `from None` hides the one
    it was raised while handling, which is often the cause worth seeing: it is written out too."""
    parts = [f"draftbench {__version__}\n", f"command: {shlex.join(['draftbench', *argv])}\n\n"]
    hidden = exc.__context__ if exc.__suppress_context__ else None
    if hidden is not None:
        parts += traceback.format_exception(hidden)
        parts.append("\nDuring handling of the above exception, another exception occurred:\n\n")
    parts += traceback.format_exception(exc)
    return "".join(parts)


def keep_traceback(exc: BaseException, argv: list[str]) -> Path:
    """Writes the traceback to a new file under the logs folder; OSError if it cannot."""
    folder = paths.logs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    # A new name every time, even for two failures within a second of one process (tests, the app).
    fd, name = tempfile.mkstemp(prefix=f"error-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(traceback_text(exc, argv))
    return Path(name)


def report(exc: BaseException, argv: list[str], debug: bool) -> int:
    """Says `exc` in one line on stderr and returns the exit status."""
    line, status = describe(exc)
    if debug:
        try:
            line += f" (traceback in {keep_traceback(exc, argv)})"
        except OSError as err:
            line += f" (the traceback could not be written under {paths.logs_dir()}: {err.strerror or err})"
    elif status == 1:
        line += f" ({HINT})"
    print(f"draftbench: {line}", file=sys.stderr)
    return status
