"""Everything a sweep writes, one method per event, each its own transaction: a reader (the
Live page, the remote agent) never sees half of one."""

from __future__ import annotations

import json
import os
import platform
import time
from typing import Any, Callable, cast

from workbench.store.connection import Database
from workbench.store.schema import RUN_TABLES


def experiment_for(db: Database, name: str, plan_hash: str, plan_text: str,
                   plan_path: str, host: dict[str, Any]) -> int:
    """The experiment of a plan (by its hash), created on first use."""
    row = db.execute("SELECT id FROM experiments WHERE plan_hash = ?", [plan_hash]).fetchone()
    if row:
        return row[0]
    with db.conn:
        return _insert(db, "experiments", {
            "name": name, "plan_hash": plan_hash, "plan": plan_text, "plan_path": plan_path,
            "created": time.time(), "host": json.dumps(host),
        })


def _insert(db: Database, table: str, row: dict[str, Any]) -> int:
    """Inserts one row into a table keyed by an integer id, and returns that id."""
    # sqlite_utils types last_pk for any key (or none yet); these tables' keys are integers.
    return cast(int, db.table(table).insert(row).last_pk)


def _clear_run(db: Database, run_id: int) -> None:
    present = set(db.table_names())
    for table in RUN_TABLES:
        if table in present:
            db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])


def delete_run(db: Database, run_id: int) -> None:
    """A run and everything measured in it."""
    with db.conn:
        _clear_run(db, run_id)
        if "annotations" in db.table_names():  # the reader's notes go with the run they were about
            db.execute("DELETE FROM annotations WHERE run_id = ?", [run_id])
        db.execute("DELETE FROM runs WHERE id = ?", [run_id])


def sweep_exited(db: Database, pid: int, events_path: str) -> None:
    """Closes the sweep row of a runner that exited without closing it (killed, or crashed): it is
    'failed', with nothing pending, so no reader takes it for a sweep still in progress."""
    with db.conn:
        db.execute("UPDATE sweeps SET finished = ?, status = 'failed', runs_pending = 0 WHERE pid = ? AND "
                   "events_path = ? AND finished IS NULL", [time.time(), pid, events_path])


def add_imported_run(db: Database, row: dict[str, Any]) -> int:
    """A run measured elsewhere (an imported result), stored whole."""
    with db.conn:
        return _insert(db, "runs", row)


class Recorder:
    """The runner's writes into an open (writable) database."""

    def __init__(self, db: Database):
        self.db = db

    def experiment(self, name: str, plan_hash: str, plan_text: str, plan_path: str, host: dict[str, Any]) -> int:
        return experiment_for(self.db, name, plan_hash, plan_text, plan_path, host)

    def register_runs(self, experiment_id: int, keys: list[str], new_row: Callable[[int], dict[str, Any]]) -> dict[str, int]:
        """The ids of the experiment's runs with these keys; a key not stored yet gets the row
        `new_row(its index)`, and a run stored but not completed (interrupted or failed before)
        loses everything it wrote and is pending again. A skipped repeat (`repeats = "auto"` had
        enough without it) stays skipped."""
        ids: dict[str, int] = {}
        with self.db.conn:
            for index, key in enumerate(keys):
                row = self.db.execute("SELECT id, status FROM runs WHERE experiment_id = ? AND key = ?",
                                      [experiment_id, key]).fetchone()
                if row is None:
                    ids[key] = _insert(self.db, "runs", new_row(index))
                    continue
                ids[key] = row[0]
                if row[1] == "failed":
                    self._keep_failed_attempt(row[0])
                if row[1] not in ("completed", "skipped"):
                    _clear_run(self.db, row[0])
                    self.db.table("runs").update(row[0], {"status": "pending", "error": None, "log_tail": None})
        return ids

    def _keep_failed_attempt(self, run_id: int) -> None:
        """A copy of a failed run's row (its error, log tail and figures), linked to the run that
        redoes it, so History shows the failure beside the redo. Its own key keeps the experiment's
        one row per key; what it measured (samples, logs) goes with the redo's reset, as before."""
        old = dict(next(iter(self.db["runs"].rows_where("id = ?", [run_id]))))
        attempts = self.db.execute("SELECT count(*) FROM runs WHERE redone_by = ?", [run_id]).fetchone()[0]
        old.pop("id")
        _insert(self.db, "runs", {**old, "key": f"{old['key']}#failed-{attempts + 1}", "redone_by": run_id})

    def sweep_started(self, experiment_id: int, events_path: str | None, started: float,
                      runs_total: int, runs_pending: int) -> int:
        """The sweep row of this process, by which the app finds a sweep in progress (its pid)."""
        with self.db.conn:
            return _insert(self.db, "sweeps", {
                "experiment_id": experiment_id, "pid": os.getpid(), "host": platform.node(),
                "events_path": events_path, "started": started, "heartbeat": started, "status": "running",
                "runs_total": runs_total, "runs_pending": runs_pending})

    def heartbeat(self, sweep_id: int, t: float) -> None:
        with self.db.conn:
            self.db.table("sweeps").update(sweep_id, {"heartbeat": t})

    def sweep_ended(self, sweep_id: int, status: str) -> None:
        # Nothing is pending in a sweep that ended, however it ended: what it left undone is the
        # next sweep's (a resume counts it again).
        with self.db.conn:
            self.db.table("sweeps").update(sweep_id, {"finished": time.time(), "status": status, "runs_pending": 0})

    def log_lines(self, run_id: int, lines: list[tuple[float, str, str]]) -> None:
        """Server log lines (time, stream, text) of the run that was in flight when they came."""
        with self.db.conn:
            self.db.table("logs").insert_all([{"run_id": run_id, "t": t, "stream": stream, "line": line}
                                        for t, stream, line in lines])

    def telemetry(self, readings: list[dict[str, Any]]) -> None:
        with self.db.conn:
            self.db.table("telemetry").insert_all(readings)

    def server_command(self, run_ids: list[int], command: str, vllm_args: list[str]) -> None:
        """The command line that starts the server these runs are measured on."""
        with self.db.conn:
            for run_id in run_ids:
                self.db.table("runs").update(run_id, {"command": command, "argv": json.dumps(vllm_args)})

    def server_placement(self, run_ids: list[int], gpus: list[int] | None, env: dict[str, str]) -> None:
        """The GPUs a server was pinned to (None: not pinned) and the environment it got."""
        with self.db.conn:
            for run_id in run_ids:
                self.db.table("runs").update(run_id, {"gpus": None if gpus is None else json.dumps(gpus),
                                                "env": json.dumps(env)})

    def reset_runs(self, run_ids: list[int]) -> None:
        """Runs whose worker was lost before they completed: everything they wrote goes, and they
        are pending again (another worker redoes them)."""
        with self.db.conn:
            for run_id in run_ids:
                row = self.db.execute("SELECT status FROM runs WHERE id = ?", [run_id]).fetchone()
                if row and row[0] != "completed":
                    _clear_run(self.db, run_id)
                    self.db.table("runs").update(run_id, {"status": "pending", "error": None, "log_tail": None})

    def server_environment(self, run_ids: list[int], environment: dict[str, Any]) -> None:
        with self.db.conn:
            for run_id in run_ids:
                self.db.table("runs").update(run_id, {"environment": json.dumps(environment)})

    def server_provenance(self, run_ids: list[int], provenance: dict[str, Any]) -> None:
        """What the server these runs are measured on was: image, versions, GPU settings, backend.
        The versions it reports once started (GET /version) replace what was known before it was."""
        known = {k: provenance[k] for k in ("vllm_version", "transformers_version") if provenance.get(k)}
        with self.db.conn:
            for run_id in run_ids:
                self.db.table("runs").update(run_id, {"provenance": json.dumps(provenance, sort_keys=True), **known})

    def run_started(self, run_id: int) -> None:
        with self.db.conn:
            self.db.table("runs").update(run_id, {"status": "running", "started": time.time()})

    def prompts_seen(self, run_id: int, seen_before: bool, warnings: list[str] | None = None) -> None:
        """Whether the server had already been sent one of the run's prompts, and the run's
        warnings where that makes a new one."""
        update: dict[str, Any] = {"prompts_seen_before": int(seen_before)}
        if warnings is not None:
            update["warnings"] = json.dumps(warnings)
        with self.db.conn:
            self.db.table("runs").update(run_id, update)

    def sample(self, sweep_id: int, sample: dict[str, Any], positions: list[dict[str, Any]], requests: list[dict[str, Any]]) -> None:
        """One scrape: the sample, its per-position rows, the requests finished since the last
        one, and the sweep's heartbeat."""
        with self.db.conn:
            self.db.table("sweeps").update(sweep_id, {"heartbeat": time.time()})
            self.db.table("samples").insert(sample)
            if positions:
                self.db.table("positions").insert_all(positions)
            if requests:
                self.db.table("requests").insert_all(requests)

    def run_completed(self, run_id: int, summary: dict[str, Any]) -> None:
        with self.db.conn:
            self.db.table("runs").update(run_id, {**summary, "status": "completed", "finished": time.time()})

    def run_partial(self, run_id: int, summary: dict[str, Any], error: str) -> None:
        """A run whose window ended with some requests failed: its figures are kept (and shown as
        partial), but it is not complete, so speedups leave it out and a rerun redoes it."""
        with self.db.conn:
            self.db.table("runs").update(run_id, {**summary, "status": "partial", "error": error,
                                            "finished": time.time()})

    def run_skipped(self, run_id: int, reason: str) -> None:
        """A repeat `repeats = "auto"` did not need: its configuration's interval was narrow
        enough. Not pending (a resume leaves it), not measured (speedups never see it)."""
        with self.db.conn:
            self.db.table("runs").update(run_id, {"status": "skipped", "error": reason, "finished": time.time()})

    def runs_held(self, run_ids: list[int], reason: str) -> None:
        """Runs the sweep did not start (their baseline failed): still pending, so the next sweep
        of the plan runs them, with `reason` saying why they have not run yet."""
        with self.db.conn:
            for run_id in run_ids:
                self.db.table("runs").update(run_id, {"error": reason})

    def run_failed(self, run_id: int, error: str, log_tail: str) -> None:
        with self.db.conn:
            self.db.table("runs").update(run_id, {"status": "failed", "error": error, "log_tail": log_tail,
                                            "finished": time.time()})

    def lossless(self, figures: dict[int, dict[str, Any]]) -> None:
        """Runs' accuracy and lossless-check figures (workbench.analysis.lossless.columns)."""
        with self.db.conn:
            for run_id, columns in figures.items():
                self.db.table("runs").update(run_id, columns)

    def cancel_running(self, experiment_id: int | None) -> None:
        """After an interrupt: the experiment's run in flight is cancelled (redone on a resume).
        None: the sweep was stopped before its experiment was registered, so nothing runs."""
        with self.db.conn:
            self.db.execute("UPDATE runs SET status = 'cancelled', finished = ? WHERE status = 'running' "
                            "AND experiment_id = ?", [time.time(), experiment_id])

    def recommendations(self, experiment_id: int, rows: list[dict[str, Any]]) -> None:
        """What an adaptive sweep concluded, replacing what an earlier pass of it stored."""
        with self.db.conn:
            self.db.execute("DELETE FROM recommendations WHERE experiment_id = ?", [experiment_id])
            if rows:
                self.db.table("recommendations").insert_all(rows)
