"""Reads, named by what the caller wants to know. A file written by an older version may lack a
table: a read of it answers as for an empty one."""

from __future__ import annotations

import os
import platform
import sqlite3
import time
from collections import Counter
from typing import Any

from workbench.store.connection import Database
from workbench.store.records import (Answer, FeedRows, RunRecord, RunStatus, SweepRecord, run_record, run_status,
                                     sweep_record)

# What the Live page draws of a run, in the order it reads it, as plain tuples: a 100,000-sample
# history turns into one numpy array without a Python object per field.
FEED_COLUMNS = {
    "samples": "t, mal, acceptance_rate, output_tok_s",
    "positions": "t, position, acceptance",
    "requests": "idx, ttft_ms, itl_mean_ms",
    "logs": "line",
    "telemetry": 't, device, physical, "index", util_pct, power_w, mem_used_mib',
}


def _has(db: Database, table: str) -> bool:
    return table in db.table_names()


def run(db: Database, run_id: int) -> RunRecord | None:
    rows = list(db["runs"].rows_where("id = ?", [run_id]))
    return run_record(rows[0]) if rows else None


def answers(db: Database, run_id: int) -> list[Answer]:
    """A run's answered requests, graded right / wrong / None, in the order they were stored.
    Empty for runs stored before answers were (their `text` is NULL)."""
    if not _has(db, "requests") or "text" not in db["requests"].columns_dict:
        return []
    rows = db.execute("SELECT idx, prompt_id, text, correct FROM requests WHERE run_id = ? AND ok = 1 "
                      "AND text IS NOT NULL ORDER BY id", [run_id]).fetchall()
    return [Answer(idx=idx, prompt_id=pid, text=text, correct=None if correct is None else bool(correct))
            for idx, pid, text, correct in rows]


def experiment_plan(db: Database, experiment_id: int) -> str | None:
    """The plan text an experiment was run from, as stored when it started."""
    row = db.execute("SELECT plan FROM experiments WHERE id = ?", [experiment_id]).fetchone()
    return row[0] if row else None


def experiment_source(db: Database, experiment_id: int) -> tuple[str, str] | None:
    """An experiment's plan text and the file it was read from, as stored when it started."""
    row = db.execute("SELECT plan, plan_path FROM experiments WHERE id = ?", [experiment_id]).fetchone()
    return (row[0], row[1]) if row else None


def request_counts(db: Database, run_id: int) -> tuple[int, int]:
    """How many of the run's requests were stored as answered and as failed: a run that failed
    before its summary was written still has the requests its scrapes recorded."""
    if not _has(db, "requests"):
        return 0, 0
    ok, failed = db.execute("SELECT coalesce(sum(ok = 1), 0), coalesce(sum(ok IS NOT 1), 0) FROM requests "
                            "WHERE run_id = ?", [run_id]).fetchone()
    return ok, failed


def runs(db: Database) -> list[RunRecord]:
    """Every run, oldest first, failed attempts that were redone included (History shows them)."""
    return [run_record(row) for row in db["runs"].rows_where(order_by="id")]


def _current(db: Database) -> str:
    # The experiment's own runs, not the failed attempts kept beside their redo (schema 15); a file
    # opened read-only before its migration has none.
    return " AND redone_by IS NULL" if "redone_by" in db["runs"].columns_dict else ""


def runs_of_experiment(db: Database, experiment_id: int) -> list[RunRecord]:
    """An experiment's runs in the order they were registered."""
    return [run_record(row) for row in
            db["runs"].rows_where("experiment_id = ?" + _current(db), [experiment_id], order_by="id")]


def runs_in_plan_order(db: Database, experiment_id: int) -> list[RunRecord]:
    return [run_record(row) for row in
            db["runs"].rows_where("experiment_id = ?" + _current(db), [experiment_id], order_by="seq")]


def completed_run_keys(db: Database, experiment_id: int) -> set[str]:
    return {row[0] for row in db.execute("SELECT key FROM runs WHERE experiment_id = ? AND status = 'completed'",
                                         [experiment_id])}


def experiment_of_plan(db: Database, plan_hash: str) -> int | None:
    """The experiment a plan's runs are recorded in (experiments.plan_hash is unique), if any."""
    row = db.execute("SELECT id FROM experiments WHERE plan_hash = ?", [plan_hash]).fetchone()
    return row[0] if row else None


def status_counts(db: Database, experiment_id: int) -> Counter[RunStatus]:
    """How many of the experiment's runs are in each status (none: 0)."""
    counts: Counter[RunStatus] = Counter()
    for status, n in db.execute("SELECT status, count(*) FROM runs WHERE experiment_id = ?" + _current(db)
                                + " GROUP BY status", [experiment_id]):
        counts[run_status(status, f"a run of experiment {experiment_id}")] = n
    return counts


def first_run_of_experiment(db: Database, experiment_id: int) -> int | None:
    row = db.execute("SELECT id FROM runs WHERE experiment_id = ?" + _current(db), [experiment_id]).fetchone()
    return row[0] if row else None


def latest_experiment(db: Database) -> int | None:
    """The id of the experiment created last, or None in an empty database."""
    return db.execute("SELECT max(id) FROM experiments").fetchone()[0]


def completed_siblings(db: Database, run_id: int) -> list[RunRecord]:
    """The other completed runs of a run's experiment that have per-position figures, in plan order."""
    cursor = db.execute("SELECT r.* FROM runs r JOIN runs me ON me.experiment_id = r.experiment_id "
                        "WHERE me.id = ? AND r.id != ? AND r.status = 'completed' AND r.per_position "
                        "IS NOT NULL ORDER BY r.seq", [run_id, run_id])
    names = [c[0] for c in cursor.description]
    return [run_record(dict(zip(names, r))) for r in cursor.fetchall()]


def sampling_of_completed(db: Database, target: str) -> list[tuple[Any, ...]]:
    """The distinct (temperature, max tokens) of the target's completed runs."""
    if not _has(db, "runs"):
        return []
    return db.execute("SELECT DISTINCT temperature, max_tokens FROM runs WHERE target = ? AND status = 'completed'",
                      [target]).fetchall()


def failed_runs_of_sweep(db: Database, pid: int, events_path: str) -> int:
    """Failed runs in the experiment(s) of the sweep that this runner (pid, events file) wrote."""
    return db.execute("SELECT count(*) FROM runs WHERE experiment_id IN (SELECT experiment_id FROM sweeps "
                      "WHERE pid = ? AND events_path = ?) AND status = 'failed'" + _current(db),
                      [pid, events_path]).fetchone()[0]


def recommendation_summaries(db: Database, experiment_id: int) -> list[str]:
    """The one-line conclusions of an adaptive sweep, in the order it reached them."""
    if not _has(db, "recommendations"):
        return []
    return [row[0] for row in db.execute("SELECT summary FROM recommendations WHERE experiment_id = ? ORDER BY id",
                                         [experiment_id])]


def active_sweeps(db: Database, stale_after_s: float = 120.0) -> list[SweepRecord]:
    """Sweeps whose runner is alive on this host (its pid exists and its heartbeat is recent)."""
    if not _has(db, "sweeps"):
        return []
    alive = []
    for row in map(sweep_record, db["sweeps"].rows_where("finished IS NULL", order_by="id desc")):
        if row.host != platform.node() or time.time() - (row.heartbeat or 0) > stale_after_s or row.pid is None:
            continue
        try:
            os.kill(row.pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        alive.append(row)
    return alive


def gpu_means(db: Database, run_id: int, t0: float, t1: float) -> list[tuple[Any, ...]]:
    """Per GPU of a run (physical, index, mean power W, mean utilisation %) over t0..t1."""
    if not _has(db, "telemetry"):
        return []
    return db.execute(
        'SELECT physical, "index", avg(power_w), avg(util_pct) FROM telemetry WHERE run_id = ? '
        "AND device = 'gpu' AND t BETWEEN ? AND ? GROUP BY physical ORDER BY physical", [run_id, t0, t1]).fetchall()


def counter_samples(db: Database, run_id: int) -> list[tuple[float, float, float]]:
    """A run's scrapes as (seconds into its window, drafts, accepted), cumulative from the window's
    start, in the order they were taken."""
    if not _has(db, "samples"):
        return []
    return [tuple(row) for row in db.execute("SELECT t, drafts, accepted FROM samples WHERE run_id = ? ORDER BY id",
                                             [run_id])]


def spec_requests(db: Database, run_ids: list[int]) -> list[tuple[Any, ...]]:
    """The successful requests of these runs that drafted: (method, n, concurrency, category,
    prompt tokens, drafting steps, accepted tokens, drafted tokens)."""
    marks = ",".join("?" * len(run_ids))
    return db.execute(
        f"SELECT r.method, r.n, r.concurrency, q.category, q.prompt_tokens, q.spec_drafts, q.spec_accepted, "
        f"q.spec_draft_tokens FROM requests q JOIN runs r ON r.id = q.run_id WHERE q.run_id IN ({marks}) "
        f"AND q.ok = 1 AND q.spec_drafts > 0", list(run_ids)).fetchall()


def request_timings(db: Database, run_ids: list[int]) -> list[tuple[Any, ...]]:
    """The successful requests of these runs, as their latency figures need them: (run id, TTFT ms,
    end-to-end latency ms, output tokens, drafting steps, per-request MAL; the last two None where vLLM
    did not report them)."""
    if not run_ids or not _has(db, "requests"):
        return []
    marks = ",".join("?" * len(run_ids))
    return db.execute(
        f"SELECT run_id, ttft_ms, latency_ms, output_tokens, spec_drafts, spec_mal FROM requests WHERE run_id IN ({marks}) "
        f"AND ok = 1 ORDER BY run_id, id", list(run_ids)).fetchall()


def run_feed(db: Database, run_id: int, after_ids: dict[str, int]) -> FeedRows:
    """For each table named in after_ids, the run's rows above that id (FEED_COLUMNS of them), and
    the new highest id per table. A writer holding the lock for a moment ends the read early:
    the tables not read yet keep their ids, and the next call catches up."""
    rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in after_ids}
    after = dict(after_ids)
    try:
        for table in after_ids:
            found = db.execute(f"SELECT id, {FEED_COLUMNS[table]} FROM {table} WHERE run_id = ? AND id > ? "
                               "ORDER BY id", [run_id, after[table]]).fetchall()
            if found:
                after[table] = found[-1][0]
            rows[table] = [row[1:] for row in found]
    except sqlite3.OperationalError:
        pass
    return FeedRows(rows, after)
