"""The tables of a results database: every table definition, the forward-only migrations that
bring an older file up to date, and which tables hold the rows of one run."""

from __future__ import annotations

import sqlite_utils

from workbench.store.errors import StoreError

SCHEMA_VERSION = 15

# Rows that belong to one run (by run_id) and are only ever appended; a run that is redone
# loses them all. The remote mirror streams them by id.
RUN_TABLES = ("samples", "positions", "requests", "logs", "telemetry")
# Rows that change in place (status, figures, heartbeats); the remote mirror sends a row again
# whenever it changes. Parents come before their children.
MUTABLE_TABLES = ("experiments", "runs", "sweeps", "recommendations")

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


def _v1(db: sqlite_utils.Database) -> None:
    db.table("experiments").create({
        "id": int, "name": str, "plan_hash": str, "plan": str, "plan_path": str,
        "created": float, "host": str,
    }, pk="id")
    db.table("experiments").create_index(["plan_hash"], unique=True)
    db.table("runs").create(RUN_COLUMNS, pk="id", foreign_keys=[("experiment_id", "experiments", "id")])
    db.table("runs").create_index(["experiment_id", "key"], unique=True)
    db.table("runs").create_index(["status"])
    db.table("samples").create({
        "id": int, "run_id": int, "t": float, "drafts": float, "draft_tokens": float, "accepted": float,
        "generation_tokens": float, "output_tokens": int, "mal": float, "acceptance_rate": float,
        "output_tok_s": float, "running": float, "waiting": float, "kv_cache_usage": float,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db.table("samples").create_index(["run_id", "id"])
    db.table("positions").create({
        "id": int, "run_id": int, "t": float, "position": int, "accepted": float, "drafts": float,
        "acceptance": float,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db.table("positions").create_index(["run_id", "id"])
    db.table("requests").create({
        "id": int, "run_id": int, "idx": int, "prompt_id": str, "prompt_tokens": int,
        "output_tokens": int, "ttft_ms": float, "itl_mean_ms": float, "itl_max_ms": float,
        "latency_ms": float, "ok": int, "error": str, "finish_reason": str,
        "spec_mal": float, "spec_acceptance_rate": float, "spec_drafts": int,
        "spec_draft_tokens": int, "spec_accepted": int, "spec_histogram": str,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db.table("requests").create_index(["run_id", "id"])
    db.table("logs").create({"id": int, "run_id": int, "t": float, "stream": str, "line": str},
                      pk="id", foreign_keys=[("run_id", "runs", "id")])
    db.table("logs").create_index(["run_id", "id"])


def _v2(db: sqlite_utils.Database) -> None:
    if "acceptance" not in db["positions"].columns_dict:
        db.table("positions").add_column("acceptance", float)
    # One row per invocation of the runner, so the app can find a sweep still in progress
    # (its pid and events file) and reattach to it after being closed.
    db.table("sweeps").create({
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
            db.table(table).add_column(column, kind)


def _v4(db: sqlite_utils.Database) -> None:
    # Launch profiles and GPU telemetry: the environment a run had (GPU model, driver, CUDA/ROCm,
    # vLLM and torch versions, the profile), readings at ~1 Hz, and the energy figures they give.
    for column, kind in (("profile", str), ("environment", str), ("energy_j", float),
                         ("joules_per_token", float), ("power_mean_w", float), ("gpu_util_mean", float),
                         ("gpu_mem_peak_mib", float)):
        if column not in db["runs"].columns_dict:
            db.table("runs").add_column(column, kind)
    db.table("telemetry").create({
        "id": int, "run_id": int, "t": float, "device": str, "physical": int, "index": int, "name": str,
        "util_pct": float, "mem_used_mib": float, "mem_total_mib": float, "power_w": float, "temp_c": float,
    }, pk="id", foreign_keys=[("run_id", "runs", "id")], if_not_exists=True)
    db.table("telemetry").create_index(["run_id", "id"], if_not_exists=True)


def _v5(db: sqlite_utils.Database) -> None:
    # What an adaptive sweep concluded per method x workload x concurrency: the recommended N,
    # the speedup predicted for it before it was confirmed, the one measured, and the runs it took.
    db.table("recommendations").create({
        "id": int, "experiment_id": int, "target": str, "method": str, "draft": str, "options": str,
        "workload": str, "concurrency": int, "family": str, "best_n": int, "predicted_speedup": float,
        "predicted_half_width": float, "measured_speedup": float, "uncertain": int, "runner_up": int,
        "runs_used": int, "runs_total": int, "measured_n": str, "alpha": float, "beta": float,
        "curve": str, "summary": str, "created": float,
    }, pk="id", foreign_keys=[("experiment_id", "experiments", "id")], if_not_exists=True)
    db.table("recommendations").create_index(["experiment_id"], if_not_exists=True)


def _v6(db: sqlite_utils.Database) -> None:
    # The mirror of a remote host's database: the local id of every host row, per source (host
    # and database) and table. Files that mirrored a host before this version already have it
    # (it used to be made on first use), in this same shape.
    db.execute("CREATE TABLE IF NOT EXISTS remote_rows (source TEXT NOT NULL, tbl TEXT NOT NULL, "
               "remote_id INTEGER NOT NULL, local_id INTEGER NOT NULL, "
               "PRIMARY KEY (source, tbl, remote_id))")
    db.execute("CREATE INDEX IF NOT EXISTS remote_rows_local ON remote_rows (tbl, local_id)")


def _v7(db: sqlite_utils.Database) -> None:
    # What the load generator itself cost over a run's window (CPU seconds of its processes), so a
    # throughput the client may have limited can be told apart. A run with some requests failed
    # is now stored as "partial" (status), with its first error.
    for column, kind in (("client_cpu_s", float), ("client_processes", int)):
        if column not in db["runs"].columns_dict:
            db.table("runs").add_column(column, kind)


def _v8(db: sqlite_utils.Database) -> None:
    # Provenance: what decides a result besides the plan (image and digest, vLLM commit, ROCm/HIP,
    # partitions, power cap, AITER variables, the attention backend vLLM chose ...), one JSON
    # object per run, collected when its server started (workbench.host.provenance).
    if "provenance" not in db["runs"].columns_dict:
        db.table("runs").add_column("provenance", str)


def _v9(db: sqlite_utils.Database) -> None:
    # Which GPU(s) a run's server was pinned to (a JSON list of physical indices; on vLLM's CPU
    # build the logical slot numbers), so runs of a parallel sweep can be told apart and checked.
    if "gpus" not in db["runs"].columns_dict:
        db.table("runs").add_column("gpus", str)


def _v10(db: sqlite_utils.Database) -> None:
    # What-if runs: served with dummy weights, acceptance imposed through vLLM's synthetic
    # rejection sampler. `imposed` is the curve and where it came from (JSON: rates, source, mal);
    # a what-if baseline has what_if = 1 and no curve. Measured runs: 0 and NULL.
    for column, kind in (("what_if", int), ("imposed", str)):
        if column not in db["runs"].columns_dict:
            db.table("runs").add_column(column, kind)


def _v11(db: sqlite_utils.Database) -> None:
    # What the desktop app itself cost over a run's window (CPU seconds of its process), beside the
    # load generator's: on a small host a busy GUI slows the server it measures. NULL where no app
    # started the sweep (the command line) or its process could not be read.
    if "app_cpu_s" not in db["runs"].columns_dict:
        db.table("runs").add_column("app_cpu_s", float)


def _v12(db: sqlite_utils.Database) -> None:
    # What a reviewer needs before trusting a run's figures. Steady state: the longest stretch of
    # the window with at least 90 % of the concurrency in flight, its length and output tok/s,
    # beside the whole window that `vllm bench serve` reports (steady_s 0: the load never got
    # there). The prefix cache's queries and hits over the window, since a method that loses
    # cache hits pays for prefill its baseline skipped. The acceptance alarms raised on the
    # window's counters (a JSON list; NULL where the run was stored before they were checked).
    for column, kind in (("steady_s", float), ("steady_tok_s", float), ("prefix_cache_queries", float),
                         ("prefix_cache_hits", float), ("prefix_cache_hit_rate", float), ("alarms", str)):
        if column not in db["runs"].columns_dict:
            db.table("runs").add_column(column, kind)


def _v13(db: sqlite_utils.Database) -> None:
    # The lossless check: every answer as streamed, and whether it got the task right where the
    # workload grades answers (NULL: not graded). Per run, its accuracy, and how its answers
    # compare with its baseline's (workbench.analysis.lossless): the baseline run, answers
    # compared and identical, the median common prefix (a share of the baseline's answer), the
    # graded answers that turned wrong and right.
    requests, runs = db.table("requests"), db.table("runs")
    for name, kind in (("text", str), ("correct", int)):
        if name not in requests.columns_dict:
            requests.add_column(name, kind)
    added: tuple[tuple[str, type], ...] = (
        ("accuracy", float), ("graded", int), ("lossless_baseline", int), ("lossless_compared", int),
        ("lossless_identical", int), ("lossless_prefix", float), ("lossless_turned_wrong", int),
        ("lossless_turned_right", int))
    for name, of_type in added:
        if name not in runs.columns_dict:
            runs.add_column(name, of_type)


def _v14(db: sqlite_utils.Database) -> None:
    # The vLLM that served a run is not always the one installed where the sweep ran (a docker
    # image's, a remote host's): vllm_version now holds the serving one's, beside its transformers,
    # which decides whether some models load at all (Gemma 4 on vLLM <= 0.27). And how the server
    # sampled drafts (vLLM's SpeculativeConfig.draft_sample_method: greedy or probabilistic), which
    # changes acceptance; NULL where no model drafts, and for runs stored before.
    for column in ("transformers_version", "draft_sample_method"):
        if column not in db["runs"].columns_dict:
            db.table("runs").add_column(column, str)


def _v15(db: sqlite_utils.Database) -> None:
    # A reader's tags and notes on a run (History). A table of their own, not columns of runs:
    # they are the reader's words, not the sweep's, so a redo of the run (which rewrites its row)
    # and a remote mirror (which sends a host's run rows again whole) leave them as they are.
    db.execute("CREATE TABLE IF NOT EXISTS annotations (run_id INTEGER PRIMARY KEY REFERENCES runs(id), "
               "tags TEXT NOT NULL DEFAULT '', notes TEXT NOT NULL DEFAULT '', updated FLOAT)")
    # A failed run that is redone used to be reset in place, and the record that it failed (its
    # error, its log tail, when) was lost. Now the failed attempt is kept as a run row of its own,
    # `redone_by` the id of the run that redoes it; the experiment's own rows have NULL there.
    if "redone_by" not in db["runs"].columns_dict:
        db.table("runs").add_column("redone_by", int)


MIGRATIONS = {1: _v1, 2: _v2, 3: _v3, 4: _v4, 5: _v5, 6: _v6, 7: _v7, 8: _v8, 9: _v9, 10: _v10, 11: _v11,
              12: _v12, 13: _v13, 14: _v14, 15: _v15}


def schema_version(db: sqlite_utils.Database) -> int:
    if "meta" not in db.table_names():
        return 0
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(db: sqlite_utils.Database) -> None:
    """Every migration the file lacks, in order, each in its own transaction."""
    version = schema_version(db)
    if version == 0 and [t for t in db.table_names() if t != "meta"]:
        raise StoreError("the file is an SQLite database but not a Draftbench one; choose another file")
    for target in range(version + 1, SCHEMA_VERSION + 1):
        with db.conn:
            if "meta" not in db.table_names():
                db.table("meta").create({"key": str, "value": str}, pk="key")
            MIGRATIONS[target](db)
            db.table("meta").upsert({"key": "schema_version", "value": str(target)}, pk="key")
