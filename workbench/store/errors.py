"""What goes wrong with a database file, said in one line."""

from __future__ import annotations

import sqlite3

from workbench.errors import DraftbenchError

# Anything SQLite raises once a file is open (damaged pages, a full disk, another writer's
# lock), for callers that report it without importing sqlite3 themselves.
DatabaseError = sqlite3.DatabaseError


class StoreError(DraftbenchError):
    """A one-line reason the database cannot be used."""


def explain(exc: sqlite3.DatabaseError) -> str:
    """SQLite's message for a failure after the file opened, with what the user can do about it."""
    text = str(exc)
    if "locked" in text:
        return f"{text} (another program is writing to it; close it or wait)"
    if "full" in text or "disk I/O" in text:
        return f"{text} (free some disk space, then run the same plan again to resume)"
    if "malformed" in text or "not a database" in text:
        return f"{text} (the file is damaged; open another database)"
    return text
