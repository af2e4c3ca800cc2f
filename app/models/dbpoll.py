"""Incremental reads of a results database through a read-only connection (only new rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench import store


class RunFeed:
    """New samples, positions, requests and log lines of one run since the last poll."""

    # The columns of each table are the store's FEED_COLUMNS, as plain tuples.
    TABLES = tuple(store.FEED_COLUMNS)

    def __init__(self, db_path: Path, run_id: int):
        self.db_path = db_path
        self.run_id = run_id
        self.last = {t: 0 for t in self.TABLES}
        self._db: store.Database | None = None
        self._tables: set[str] = set()

    def _database(self) -> store.Database | None:
        if self._db is None:
            try:
                self._db = store.open_db(self.db_path, readonly=True)
            except store.StoreError:
                return None
            # Databases written before telemetry existed (schema < 4) lack its table.
            self._tables = store.tables(self._db)
        return self._db

    def poll(self) -> dict[str, list[tuple[Any, ...]]]:
        db = self._database()
        out: dict[str, list[tuple[Any, ...]]] = {t: [] for t in self.TABLES}
        if db is None:
            return out
        # A writer holding the lock for a moment leaves some tables for the next poll.
        feed = store.run_feed(db, self.run_id, {t: self.last[t] for t in self.TABLES if t in self._tables})
        self.last.update(feed.after)
        out.update(feed.rows)
        return out

    def run_row(self) -> store.RunRecord | None:
        db = self._database()
        return None if db is None else store.run(db, self.run_id)

    def siblings(self) -> list[store.RunRecord]:
        """Completed runs of the same experiment, for drawing faintly behind the current one."""
        db = self._database()
        return [] if db is None else store.completed_siblings(db, self.run_id)

    def close(self) -> None:
        if self._db is not None:
            store.close(self._db)
            self._db = None
