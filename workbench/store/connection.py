"""Opening a results database: created and migrated for writing (WAL), or read-only for the
views; a file that cannot be used is refused in one line before anything touches it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

from workbench.store.errors import StoreError
from workbench.store.schema import SCHEMA_VERSION, migrate, schema_version

# How long a writer waits for another program's write lock before giving up.
BUSY_TIMEOUT_S = 30.0
Database = sqlite_utils.Database


def connect_readonly(path: str | Path, timeout: float = 5.0) -> sqlite3.Connection:
    """A plain read-only connection (no schema check), for copying or streaming a file as it is."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout, check_same_thread=False)


def open_db(path: str | Path, readonly: bool = False) -> Database:
    """Open (creating and migrating if needed) a results database, or raise StoreError."""
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a database file")
    if readonly:
        if not path.exists():
            raise StoreError(f"no database at {path}")
        try:
            conn = connect_readonly(path)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path} ({exc})") from None
        db = sqlite_utils.Database(conn)
        _check(db, path, readonly=True)
        return db
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder for {path}: {exc.strerror}") from None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        db = sqlite_utils.Database(conn)
        _check(db, path, readonly=False)
        db.enable_wal()
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        migrate(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(_unusable(path, exc)) from None
    return db


def close(db: Database) -> None:
    db.conn.close()


def tables(db: Database) -> set[str]:
    """The tables the file has: one written by an older version lacks some."""
    return set(db.table_names())


def _unusable(path: Path, exc: sqlite3.DatabaseError) -> str:
    if "locked" in str(exc):
        return f"{path} is locked by another program writing to it; close that program or try again"
    return f"{path} is not a usable Draftbench database ({exc})"


def _check(db: Database, path: Path, readonly: bool) -> None:
    try:
        version = schema_version(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(_unusable(path, exc)) from None
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} was written by a newer Draftbench (schema {version}, "
                         f"this one knows up to {SCHEMA_VERSION}); upgrade Draftbench to open it")
    if readonly and version == 0 and db.table_names():
        raise StoreError(f"{path} is an SQLite file but not a Draftbench database")


def check_integrity(db: Database, path: str | Path) -> None:
    """Refuse a damaged file before writing to it (quick_check reads every page once)."""
    try:
        problem = db.execute("PRAGMA quick_check(1)").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    if problem != "ok":
        problem = " ".join(problem.replace("*** in database main ***", "").split())
        raise StoreError(f"{path} is damaged ({problem}); nothing was written to it: open another database")
