"""Incremental reads of a results database through a read-only connection (only new rows)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from workbench import store


class RunFeed:
    """New samples, positions, requests and log lines of one run since the last poll."""

    # Only the columns the Live page draws, in the order it reads them, as plain tuples: a
    # 100,000-sample history turns into one numpy array without a Python object per field.
    COLUMNS = {
        "samples": "t, mal, acceptance_rate, output_tok_s",
        "positions": "t, position, acceptance",
        "requests": "idx, ttft_ms, itl_mean_ms",
        "logs": "line",
        "telemetry": 't, device, physical, "index", util_pct, power_w, mem_used_mib',
    }
    TABLES = tuple(COLUMNS)

    def __init__(self, db_path: Path, run_id: int):
        self.db_path = db_path
        self.run_id = run_id
        self.last = {t: 0 for t in self.TABLES}
        self._conn: sqlite3.Connection | None = None
        self._tables: set[str] = set()

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None:
            try:
                db = store.open_db(self.db_path, readonly=True)
            except store.StoreError:
                return None
            self._conn = db.conn
            # Databases written before telemetry existed (schema < 4) lack its table.
            self._tables = set(db.table_names())
        return self._conn

    def poll(self) -> dict[str, list[sqlite3.Row]]:
        conn = self._connection()
        out: dict[str, list] = {t: [] for t in self.TABLES}
        if conn is None:
            return out
        try:
            for table, columns in self.COLUMNS.items():
                if table not in self._tables:
                    continue
                rows = conn.execute(f"SELECT id, {columns} FROM {table} WHERE run_id = ? AND id > ? ORDER BY id",
                                    [self.run_id, self.last[table]]).fetchall()
                if rows:
                    self.last[table] = rows[-1][0]
                out[table] = [row[1:] for row in rows]
        except sqlite3.OperationalError:
            pass  # a writer holds the lock for a moment: the next poll catches up
        return out

    def run_row(self) -> dict | None:
        conn = self._connection()
        if conn is None:
            return None
        cursor = conn.execute("SELECT * FROM runs WHERE id = ?", [self.run_id])
        row = cursor.fetchone()
        return dict(zip([c[0] for c in cursor.description], row)) if row else None

    def siblings(self) -> list[dict]:
        """Completed runs of the same experiment, for drawing faintly behind the current one."""
        conn = self._connection()
        if conn is None:
            return []
        cursor = conn.execute("SELECT r.* FROM runs r JOIN runs me ON me.experiment_id = r.experiment_id "
                              "WHERE me.id = ? AND r.id != ? AND r.status = 'completed' AND r.per_position "
                              "IS NOT NULL ORDER BY r.seq", [self.run_id, self.run_id])
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, r)) for r in cursor.fetchall()]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
