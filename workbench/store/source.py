"""A remote host's database as its agent reads it for the mirror: read-only, rows of any table
by column name (the mirror copies them alike), several reads in one consistent snapshot."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from workbench.store.connection import connect_readonly
from workbench.store.records import SweepRecord, TableRow

# The runner may hold the write lock for a while (a big batch of rows); the agent waits for it.
TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSignature:
    """What the host holds of one run in a table: its row count and highest and lowest row id. The
    mirror holds the same count and highest id, or the run is sent again whole."""
    run_id: int
    count: int
    highest: int
    lowest: int


class Source:
    def __init__(self, path: str | Path):
        self.conn = connect_readonly(path, timeout=TIMEOUT_S)
        self.conn.row_factory = sqlite3.Row

    def tables(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """The reads inside see the file as it was at the first of them (one read transaction)."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def run_signatures(self, table: str) -> list[RunSignature]:
        """Per run with rows in the table: their count, highest and lowest id, by run id."""
        return [RunSignature(run_id=run_id, count=count, highest=highest, lowest=lowest)
                for run_id, count, highest, lowest in self.conn.execute(
                    f"SELECT run_id, count(*), max(id), min(id) FROM {table} GROUP BY run_id ORDER BY run_id")]

    def rows_of_run(self, table: str, run_id: int) -> list[TableRow]:
        return [dict(r) for r in self.conn.execute(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY id", [run_id])]

    def all_rows(self, table: str) -> Iterator[TableRow]:
        for r in self.conn.execute(f"SELECT * FROM {table} ORDER BY id"):
            yield dict(r)

    def rows_after(self, table: str, after_id: int, limit: int) -> list[TableRow]:
        return [dict(r) for r in self.conn.execute(
            f"SELECT * FROM {table} WHERE id > ? ORDER BY id LIMIT {int(limit)}", [after_id])]

    def max_id(self, table: str) -> int:
        return self.conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0] or 0


def latest_sweep(path: str | Path) -> SweepRecord | None:
    """The most recent sweep in the file: its runner's pid, events file and when it finished (the
    rest of the row is not read)."""
    conn = connect_readonly(path, timeout=TIMEOUT_S)
    try:
        row = conn.execute("SELECT id, pid, events_path, finished FROM sweeps ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    if row is None:
        return None
    sweep_id, pid, events_path, finished = row
    return SweepRecord(id=sweep_id, pid=pid, events_path=events_path, finished=finished)


def backup(path: str | Path, out: BinaryIO) -> None:
    """A consistent copy of the file (SQLite's online backup), written to out."""
    src = connect_readonly(path, timeout=TIMEOUT_S)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "copy.sqlite")
        dst = sqlite3.connect(copy)
        src.backup(dst)
        dst.close()
        with open(copy, "rb") as f:
            shutil.copyfileobj(f, out)
