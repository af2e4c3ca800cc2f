"""The local copy of a remote host's database, row by row as the host sends them.

The local file usually holds other experiments too, so rows get local ids of their own;
`remote_rows` maps each host id to its local id (the foreign keys are translated through it),
and its highest host id per table is where the stream resumes after a reconnect."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, cast

from workbench.store.connection import Database
from workbench.store.errors import StoreError
from workbench.store.records import TableRow
from workbench.store.schema import MUTABLE_TABLES, RUN_TABLES

# The column of each table that points at its parent row, and the parent's table.
PARENT = {"runs": ("experiment_id", "experiments"), "sweeps": ("experiment_id", "experiments"),
          "recommendations": ("experiment_id", "experiments"),
          **{t: ("run_id", "runs") for t in RUN_TABLES}}


@dataclass(frozen=True, slots=True)
class MirrorState:
    """Where the stream resumes, as the host is told: per appended table the highest host id held
    here, and per table and host run (its id as text, as JSON keys are) the row count and highest
    host id held here. The host resends a run whose rows differ."""
    cursors: dict[str, int]
    signature: dict[str, dict[str, list[int]]]


def host_id(row: Mapping[str, Any]) -> int:
    """The id a row has on the host that sent it: every table's rows have one."""
    value = row.get("id")
    if isinstance(value, bool) or not isinstance(value, int):
        raise StoreError(f"a row came from the host without an integer id: {value!r}")
    return value


class Mirror:
    """Applies one host database's rows to the local database, as the host sends them: batches of
    rows, and the runs whose rows it deleted."""

    def __init__(self, db: Database, source: str,
                 on_rows: Callable[[str, list[TableRow], float], None] | None = None):
        self.db = db
        self.source = source
        self.on_rows = on_rows
        present = set(db.table_names())  # an older local schema lacks some: their rows are skipped
        self.columns = {t: set(db[t].columns_dict) - {"id"} for t in (*MUTABLE_TABLES, *RUN_TABLES) if t in present}
        self.ids: dict[str, dict[int, int]] = {t: {} for t in self.columns}
        for tbl, rid, lid in db.execute("SELECT tbl, remote_id, local_id FROM remote_rows WHERE source = ? "
                                        "AND tbl IN ('experiments', 'runs', 'sweeps')", [source]):
            self.ids[tbl][rid] = lid

    def state(self) -> MirrorState:
        """Where the stream resumes (MirrorState)."""
        cursors: dict[str, int] = {}
        signature: dict[str, dict[str, list[int]]] = {}
        for table in RUN_TABLES:
            cursors[table] = self.db.execute("SELECT coalesce(max(remote_id), 0) FROM remote_rows "
                                             "WHERE source = ? AND tbl = ?", [self.source, table]).fetchone()[0]
            signature[table] = {str(r[0]): [r[1], r[2]] for r in self.db.execute(
                f"SELECT run.remote_id, count(*), max(m.remote_id) FROM remote_rows m "
                f"JOIN {table} x ON x.id = m.local_id "
                f"JOIN remote_rows run ON run.source = m.source AND run.tbl = 'runs' AND run.local_id = x.run_id "
                f"WHERE m.source = ? AND m.tbl = ? GROUP BY run.remote_id", [self.source, table])}
        return MirrorState(cursors, signature)

    def apply_rows(self, table: str, rows: list[TableRow]) -> None:
        """One batch of a table's rows as the host stores them (host ids, host foreign keys), in
        one transaction; a table this database does not have is skipped."""
        if table not in self.columns:
            return
        with self.db.conn:
            applied = [self._apply_row(table, r) for r in rows]
        if self.on_rows:
            self.on_rows(table, [r for r in applied if r], time.time())

    def reset_run(self, table: str, run: int) -> None:
        """The host deleted its run `run`'s rows of `table` (a rerun): the local copies go, so the
        rows it sends next, whatever ids they reuse, are stored afresh."""
        local_run = self.ids.get("runs", {}).get(run)
        if table not in self.columns or local_run is None:
            return
        with self.db.conn:
            self.db.execute(f"DELETE FROM remote_rows WHERE source = ? AND tbl = ? AND local_id IN "
                            f"(SELECT id FROM {table} WHERE run_id = ?)", [self.source, table, local_run])
            self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [local_run])

    def _apply_row(self, table: str, row: TableRow) -> TableRow | None:
        remote_id = host_id(row)
        local = {k: v for k, v in row.items() if k in self.columns[table]}
        if table in PARENT:
            key, parent = PARENT[table]
            if local.get(key) is not None:
                mapped = self.ids[parent].get(local[key])
                if mapped is None:
                    return None  # its parent never arrived (cannot happen with the snapshot reads)
                local[key] = mapped
        if table in MUTABLE_TABLES:
            local_id = self.ids[table].get(remote_id)
            if local_id is not None:
                if table == "experiments":
                    local.pop("plan_hash", None)  # never changes, and may carry the host mark here
                self.db.table(table).update(local_id, local)
                return local
            if table == "experiments" and self.db.execute(
                    "SELECT 1 FROM experiments WHERE plan_hash = ?", [local["plan_hash"]]).fetchone():
                # The same plan was run here (or on another host): this host's runs are kept apart.
                local["plan_hash"] = f"{local['plan_hash']}@{self.source}"
        elif self.db.execute("SELECT 1 FROM remote_rows WHERE source = ? AND tbl = ? AND remote_id = ?",
                             [self.source, table, remote_id]).fetchone():
            return None  # already here (a batch sent again after a reconnect)
        local_id = cast(int, self.db.table(table).insert(local).last_pk)  # an integer id
        self.db.execute("INSERT OR REPLACE INTO remote_rows VALUES (?, ?, ?, ?)", [self.source, table, remote_id, local_id])
        if table in self.ids:
            self.ids[table][remote_id] = local_id
        return local


def mirrored_rows(db: Database, source: str, table: str) -> list[TableRow]:
    """A table's rows from one host as that host stores them: host ids, host foreign keys."""
    back = {t: {lid: rid for rid, lid in db.execute(
        "SELECT remote_id, local_id FROM remote_rows WHERE source = ? AND tbl = ?", [source, t])}
        for t in ("experiments", "runs")}
    out = []
    for rid, lid in db.execute("SELECT remote_id, local_id FROM remote_rows WHERE source = ? AND tbl = ? "
                               "ORDER BY remote_id", [source, table]).fetchall():
        row = {**db.table(table).get(lid), "id": rid}  # the host's id in place of the local one
        if table in PARENT:
            key, parent = PARENT[table]
            if row.get(key) is not None:
                row[key] = back[parent][row[key]]
        out.append(row)
    return out
