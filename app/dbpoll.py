"""Incremental reads of a results database through a read-only connection (only new rows)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from workbench import store


class RunFeed:
    """New samples, positions, requests and log lines of one run since the last poll."""

    TABLES = ("samples", "positions", "requests", "logs")

    def __init__(self, db_path: Path, run_id: int):
        self.db_path = db_path
        self.run_id = run_id
        self.last = {t: 0 for t in self.TABLES}
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None:
            try:
                db = store.open_db(self.db_path, readonly=True)
            except store.StoreError:
                return None
            self._conn = db.conn
            self._conn.row_factory = sqlite3.Row
        return self._conn

    def poll(self) -> dict[str, list[sqlite3.Row]]:
        conn = self._connection()
        out: dict[str, list] = {t: [] for t in self.TABLES}
        if conn is None:
            return out
        try:
            for table in self.TABLES:
                rows = conn.execute(f"SELECT * FROM {table} WHERE run_id = ? AND id > ? ORDER BY id",
                                    [self.run_id, self.last[table]]).fetchall()
                if rows:
                    self.last[table] = rows[-1]["id"]
                out[table] = rows
        except sqlite3.OperationalError:
            pass  # a writer holds the lock for a moment: the next poll catches up
        return out

    def run_row(self) -> dict | None:
        conn = self._connection()
        if conn is None:
            return None
        row = conn.execute("SELECT * FROM runs WHERE id = ?", [self.run_id]).fetchone()
        return dict(row) if row else None

    def siblings(self) -> list[dict]:
        """Completed runs of the same experiment, for drawing faintly behind the current one."""
        conn = self._connection()
        if conn is None:
            return []
        rows = conn.execute("SELECT r.* FROM runs r JOIN runs me ON me.experiment_id = r.experiment_id "
                            "WHERE me.id = ? AND r.id != ? AND r.status = 'completed' AND r.per_position "
                            "IS NOT NULL ORDER BY r.seq", [self.run_id, self.run_id]).fetchall()
        return [dict(r) for r in rows]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
