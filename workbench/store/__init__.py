"""The results database: one SQLite file (WAL), a schema version and forward-only migrations."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import sqlite_utils

SCHEMA_VERSION = 5
# How long a writer waits for another program's write lock before giving up.
BUSY_TIMEOUT_S = 30.0

RUN_COLUMNS = {
    "id": int, "experiment_id": int, "key": str, "seq": int, "server_key": str,
    "target": str, "method": str, "draft": str, "n": int, "options": str,
    "workload": str, "concurrency": int, "request_rate": float, "repeat": int,
    "num_prompts": int, "max_tokens": int, "temperature": float, "top_p": float, "warmup": int,
    "status": str, "error": str, "log_tail": str,
    "command": str, "argv": str, "env": str, "vllm_version": str, "torch_version": str, "host": str,
    "started": float, "finished": float, "prompts_seen_before": int,
    "window_s": float, "output_tokens": int, "output_tok_s": float, "generation_tokens": float,
    "prompt_tokens": float, "drafts": float, "draft_tokens": float, "accepted": float,
    "mal": float, "acceptance_rate": float, "per_position": str,
    "requests_ok": int, "requests_failed": int,
    "ttft_mean_ms": float, "ttft_p50_ms": float, "ttft_p99_ms": float,
    "itl_mean_ms": float, "itl_p50_ms": float, "itl_p99_ms": float,
    "tpot_mean_ms": float, "e2el_mean_ms": float,
    "spec_request_mal": float,
}


class StoreError(Exception):
    """A one-line reason the database cannot be used."""


def _v1(db: sqlite_utils.Database) -> None:
    db["experiments"].create({
        "id": int, "name": str, "plan_hash": str, "plan": str, "plan_path": str,
        "created": float, "host": str,
    }, pk="id")
    db["experiments"].create_index(["plan_hash"], unique=True)
    db["runs"].create(RUN_COLUMNS, pk="id", foreign_keys=[("experiment_id", "experiments", "id")])
    db["runs"].create_index(["experiment_id", "key"], unique=True)
    db["runs"].create_index(["status"])
    db["samples"].create({
        "id": int, "run_id": int, "t": float, "drafts": float, "draft_tokens": float, "accepted": float,
        "generation_tokens": float, "output_tokens": int, "mal": float, "acceptance_rate": float,
        "output_tok_s": float, "running": float, "waiting": float, "kv_cache_usage": float,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db["samples"].create_index(["run_id", "id"])
    db["positions"].create({
        "id": int, "run_id": int, "t": float, "position": int, "accepted": float, "drafts": float,
        "acceptance": float,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db["positions"].create_index(["run_id", "id"])
    db["requests"].create({
        "id": int, "run_id": int, "idx": int, "prompt_id": str, "prompt_tokens": int,
        "output_tokens": int, "ttft_ms": float, "itl_mean_ms": float, "itl_max_ms": float,
        "latency_ms": float, "ok": int, "error": str, "finish_reason": str,
        "spec_mal": float, "spec_acceptance_rate": float, "spec_drafts": int,
        "spec_draft_tokens": int, "spec_accepted": int, "spec_histogram": str,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db["requests"].create_index(["run_id", "id"])
    db["logs"].create({"id": int, "run_id": int, "t": float, "stream": str, "line": str},
                      pk="id", foreign_keys=[("run_id", "runs", "id")])
    db["logs"].create_index(["run_id", "id"])


def _v2(db: sqlite_utils.Database) -> None:
    if "acceptance" not in db["positions"].columns_dict:
        db["positions"].add_column("acceptance", float)
    # One row per invocation of the runner, so the app can find a sweep still in progress
    # (its pid and events file) and reattach to it after being closed.
    db["sweeps"].create({
        "id": int, "experiment_id": int, "pid": int, "host": str, "events_path": str,
        "started": float, "heartbeat": float, "finished": float, "status": str,
        "runs_total": int, "runs_pending": int,
    }, pk="id", foreign_keys=[("experiment_id", "experiments", "id")])


def _v3(db: sqlite_utils.Database) -> None:
    # Per-request attribution by prompt category, the exact prompt template of a run, the
    # workload's output-length policy, and the sanity warnings shown before the sweep.
    for table, column, kind in (("requests", "category", str), ("runs", "prompt_template", str),
                                ("runs", "ignore_eos", int), ("runs", "warnings", str)):
        if column not in db[table].columns_dict:
            db[table].add_column(column, kind)


def _v4(db: sqlite_utils.Database) -> None:
    # Launch profiles and GPU telemetry: the environment a run had (GPU model, driver, CUDA/ROCm,
    # vLLM and torch versions, the profile), readings at ~1 Hz, and the energy figures they give.
    for column, kind in (("profile", str), ("environment", str), ("energy_j", float),
                         ("joules_per_token", float), ("power_mean_w", float), ("gpu_util_mean", float),
                         ("gpu_mem_peak_mib", float)):
        if column not in db["runs"].columns_dict:
            db["runs"].add_column(column, kind)
    db["telemetry"].create({
        "id": int, "run_id": int, "t": float, "device": str, "physical": int, "index": int, "name": str,
        "util_pct": float, "mem_used_mib": float, "mem_total_mib": float, "power_w": float, "temp_c": float,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")], if_not_exists=True)
    db["telemetry"].create_index(["run_id", "id"], if_not_exists=True)


def _v5(db: sqlite_utils.Database) -> None:
    # What an adaptive sweep concluded per method x workload x concurrency: the recommended N,
    # the speedup predicted for it before it was confirmed, the one measured, and the runs it took.
    db["recommendations"].create({
        "id": int, "experiment_id": int, "target": str, "method": str, "draft": str, "options": str,
        "workload": str, "concurrency": int, "family": str, "best_n": int, "predicted_speedup": float,
        "predicted_half_width": float, "measured_speedup": float, "uncertain": int, "runner_up": int,
        "runs_used": int, "runs_total": int, "measured_n": str, "alpha": float, "beta": float,
        "curve": str, "summary": str, "created": float,
    }, pk="id", foreign_keys=[("experiment_id", "experiments", "id")], if_not_exists=True)
    db["recommendations"].create_index(["experiment_id"], if_not_exists=True)


MIGRATIONS = {1: _v1, 2: _v2, 3: _v3, 4: _v4, 5: _v5}
RUN_TABLES = ("samples", "positions", "requests", "logs", "telemetry")


def open_db(path: str | Path, readonly: bool = False) -> sqlite_utils.Database:
    """Open (creating and migrating if needed) a results database, or raise StoreError."""
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a database file")
    if readonly:
        if not path.exists():
            raise StoreError(f"no database at {path}")
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
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
        _migrate(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(_unusable(path, exc)) from None
    return db


def _unusable(path: Path, exc: sqlite3.DatabaseError) -> str:
    if "locked" in str(exc):
        return f"{path} is locked by another program writing to it; close that program or try again"
    return f"{path} is not a usable Draftbench database ({exc})"


def _check(db: sqlite_utils.Database, path: Path, readonly: bool) -> None:
    try:
        version = schema_version(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(_unusable(path, exc)) from None
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} was written by a newer Draftbench (schema {version}, "
                         f"this one knows up to {SCHEMA_VERSION}); upgrade Draftbench to open it")
    if readonly and version == 0 and db.table_names():
        raise StoreError(f"{path} is an SQLite file but not a Draftbench database")


def check_integrity(db: sqlite_utils.Database, path: str | Path) -> None:
    """Refuse a damaged file before writing to it (quick_check reads every page once)."""
    try:
        problem = db.execute("PRAGMA quick_check(1)").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    if problem != "ok":
        problem = " ".join(problem.replace("*** in database main ***", "").split())
        raise StoreError(f"{path} is damaged ({problem}); nothing was written to it: open another database")


def schema_version(db: sqlite_utils.Database) -> int:
    if "meta" not in db.table_names():
        return 0
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _migrate(db: sqlite_utils.Database) -> None:
    version = schema_version(db)
    if version == 0 and [t for t in db.table_names() if t != "meta"]:
        raise StoreError("the file is an SQLite database but not a Draftbench one; choose another file")
    for target in range(version + 1, SCHEMA_VERSION + 1):
        with db.conn:
            if "meta" not in db.table_names():
                db["meta"].create({"key": str, "value": str}, pk="key")
            MIGRATIONS[target](db)
            db["meta"].upsert({"key": "schema_version", "value": str(target)}, pk="key")


def experiment_for(db: sqlite_utils.Database, name: str, plan_hash: str, plan_text: str,
                   plan_path: str, host: dict) -> int:
    row = db.execute("SELECT id FROM experiments WHERE plan_hash = ?", [plan_hash]).fetchone()
    if row:
        return row[0]
    with db.conn:
        return db["experiments"].insert({
            "name": name, "plan_hash": plan_hash, "plan": plan_text, "plan_path": plan_path,
            "created": time.time(), "host": json.dumps(host),
        }).last_pk


def runs(db: sqlite_utils.Database, where: str | None = None, params: list | None = None) -> list[dict]:
    return list(db["runs"].rows_where(where, params or [], order_by="id"))


def run(db: sqlite_utils.Database, run_id: int) -> dict | None:
    try:
        return db["runs"].get(run_id)
    except sqlite_utils.db.NotFoundError:
        return None


def active_sweeps(db: sqlite_utils.Database, stale_after_s: float = 120.0) -> list[dict]:
    """Sweeps whose runner is alive on this host (its pid exists and its heartbeat is recent)."""
    import os
    import platform

    alive = []
    for row in db["sweeps"].rows_where("finished IS NULL", order_by="id desc"):
        if row["host"] != platform.node() or time.time() - (row["heartbeat"] or 0) > stale_after_s:
            continue
        try:
            os.kill(row["pid"], 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        alive.append(row)
    return alive


def delete_run(db: sqlite_utils.Database, run_id: int) -> None:
    with db.conn:
        for table in RUN_TABLES:
            if table in db.table_names():
                db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        db.execute("DELETE FROM runs WHERE id = ?", [run_id])
