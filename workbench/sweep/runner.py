"""Executes a plan: one vLLM server per configuration, measured runs against it, all into SQLite.

Resumable: runs already completed for the same plan in the same database are skipped; a run that
was interrupted (runner killed) is redone from scratch. Progress goes out as JSON lines.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import time
from typing import Callable

from workbench import launch, load, metrics, store
from workbench.host import engine, gpus
from workbench.plan import sanity
from workbench.metrics import telemetry
from workbench.load import workloads
from workbench.plan import Plan, Run, Server
from workbench.plan.profiles import Profile

import httpx

SCRAPE_INTERVAL_S = 0.5
WARMUP_PROMPT = workloads.Prompt("warmup", "warmup", "Say hello in one short sentence.")
Emit = Callable[[dict], None]


def print_event(event: dict) -> None:
    sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def file_events(path: str) -> Emit:
    """Events appended to a file, one JSON line each, flushed at once so a reader can follow it."""
    f = open(path, "a", encoding="utf-8", buffering=1)

    def emit(event: dict) -> None:
        f.write(json.dumps(event, separators=(",", ":")) + "\n")

    return emit


def host_info() -> dict:
    platform_name, devices = gpus.detect()
    return {"hostname": platform.node(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "accelerator": platform_name,
            "gpus": [d.name for d in devices]}


def _die_with_parent() -> None:
    # A SIGKILLed runner cannot stop its server; the kernel does it instead (Linux only).
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def summarize(results: list[load.RequestResult], win: metrics.Window, wall_s: float) -> dict:
    """A run's summary figures, as DESIGN.md defines them."""
    ok = [r for r in results if r.ok]
    out_tokens = sum(r.output_tokens for r in ok)
    ttft = [r.ttft_ms for r in ok if r.ttft_ms is not None]
    gaps = [g for r in ok for g in r.chunk_gaps_ms]
    tpot = [(r.latency_ms - r.ttft_ms) / (r.output_tokens - 1)
            for r in ok if r.ttft_ms is not None and r.output_tokens > 1]
    spec_mals = [r.spec["mean_acceptance_length"] for r in ok if r.spec and r.spec.get("num_spec_steps")]
    return {
        "window_s": wall_s, "output_tokens": out_tokens,
        "output_tok_s": out_tokens / wall_s if wall_s > 0 else None,
        "generation_tokens": win.generation_tokens, "prompt_tokens": win.prompt_tokens,
        "drafts": win.drafts, "draft_tokens": win.draft_tokens, "accepted": win.accepted,
        "mal": win.mean_acceptance_length, "acceptance_rate": win.acceptance_rate,
        "per_position": json.dumps(win.per_position) if win.per_position is not None else None,
        "requests_ok": len(ok), "requests_failed": len(results) - len(ok),
        "ttft_mean_ms": statistics.fmean(ttft) if ttft else None,
        "ttft_p50_ms": _pct(ttft, 0.5), "ttft_p99_ms": _pct(ttft, 0.99),
        "itl_mean_ms": statistics.fmean(gaps) if gaps else None,
        "itl_p50_ms": _pct(gaps, 0.5), "itl_p99_ms": _pct(gaps, 0.99),
        "tpot_mean_ms": statistics.fmean(tpot) if tpot else None,
        "e2el_mean_ms": statistics.fmean([r.latency_ms for r in ok]) if ok else None,
        "spec_request_mal": statistics.fmean(spec_mals) if spec_mals else None,
    }


def model_runner(lines: list[str]) -> dict:
    """Which model runner and scheduling vLLM chose, from its start-up log: recent releases serve
    the baseline with Model Runner V2 and async scheduling but fall back to V1 without async
    scheduling for some drafting methods, and that difference is part of any speedup."""
    out = {}
    if any("using the V1 model runner" in line for line in lines):
        out["model_runner"] = "V1"
    if any("Async scheduling not supported" in line or "async scheduling will be disabled" in line.lower()
           for line in lines):
        out["async_scheduling"] = False
    return out


def per_request_window(results: list[load.RequestResult]) -> dict:
    """On an attached server the counters include everyone's traffic; vLLM's per-request figures
    cover Draftbench's own requests only, so they replace the counter window where every request
    has them (same definitions: MAL = 1 + accepted / drafts)."""
    ok = [r for r in results if r.ok]
    if not ok or not all(r.spec and r.spec.get("num_spec_steps") is not None for r in ok):
        return {}
    drafts = sum(r.spec["num_spec_steps"] for r in ok)
    drafted = sum(r.spec.get("num_draft_tokens", 0) for r in ok)
    accepted = sum(r.spec.get("num_accepted_draft_tokens", 0) for r in ok)
    out = {"drafts": drafts, "draft_tokens": drafted, "accepted": accepted,
           "mal": 1 + accepted / drafts if drafts else None,
           "acceptance_rate": accepted / drafted if drafted else None}
    hists = [r.spec.get("acceptance_histogram") for r in ok]
    if all(isinstance(h, list) for h in hists) and hists:
        width = max(len(h) for h in hists)
        total = [sum(h[i] for h in hists if i < len(h)) for i in range(width)]
        steps = sum(total)
        if steps:
            out["per_position"] = json.dumps([sum(total[i + 1:]) / steps for i in range(width - 1)])
    return out


def load_workloads(plan: Plan) -> dict[str, list[workloads.Prompt]]:
    """Every workload of the plan read (benchmarks fetched) before any server starts, so an
    unreachable Hub or a broken file is reported up front; raises WorkloadError."""
    return {name: workloads.load(name) for name in dict.fromkeys(r.workload for r in plan.runs)}


class Runner:
    def __init__(self, plan: Plan, db_path: str, vllm: engine.VllmInstall | None = None,
                 emit: Emit = print_event, scrape_interval_s: float = SCRAPE_INTERVAL_S,
                 events_path: str | None = None, prompts: dict[str, list[workloads.Prompt]] | None = None):
        self.plan = plan
        self.db_path = db_path
        self.profile = plan.runs[0].server.profile if plan.runs else Profile()
        self.vllm = vllm or engine.probe(self.profile.python)
        self.host_platform = "none"
        self.environment: dict = {}
        self.sampler: telemetry.Sampler | None = None
        self.emit = emit
        self.scrape_interval_s = scrape_interval_s
        self.db = store.open_db(db_path)
        store.check_integrity(self.db, db_path)
        self.log_queue: queue.Queue = queue.Queue()
        self.log_run_id: int | None = None
        self.cancelled = False
        self.events_path = events_path
        self.sweep_id: int | None = None
        self.experiment_id: int | None = None
        # A benchmark is read (or fetched) once per sweep.
        self._prompts: dict[str, list[workloads.Prompt]] = dict(prompts or {})
        self.ids: dict[str, int] = {}
        self.done = 0
        self.launches = 0
        self.t0 = time.time()

    # --- bookkeeping -------------------------------------------------------------------------
    def _register(self, part: Plan) -> tuple[int, dict[str, int]]:
        host = host_info()
        self.host_platform = host["accelerator"]
        self.environment = gpus.environment(self.host_platform)
        self.warnings = sanity.for_runs(part, self.db)
        exp_id = store.experiment_for(self.db, part.name, part.hash, part.text, part.path, host)
        ids: dict[str, int] = {}
        with self.db.conn:
            for index, r in enumerate(part.runs):
                row = self.db.execute("SELECT id, status FROM runs WHERE experiment_id=? AND key=?",
                                      [exp_id, r.key]).fetchone()
                if row is None:
                    ids[r.key] = self.db["runs"].insert(self._run_row(exp_id, part.seq(index, r), r, host)).last_pk
                    continue
                ids[r.key] = row[0]
                if row[1] != "completed":
                    # Interrupted or failed before: everything it wrote goes, and it runs again.
                    for table in store.RUN_TABLES:
                        self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [row[0]])
                    self.db["runs"].update(row[0], {"status": "pending", "error": None, "log_tail": None})
        return exp_id, ids

    def _run_row(self, exp_id: int, seq: int, r: Run, host: dict) -> dict:
        s = r.server
        spec = launch.prepare(s, self.vllm, 0, self.host_platform)
        return {
            "experiment_id": exp_id, "key": r.key, "seq": seq, "server_key": s.key,
            "target": s.target, "method": s.method, "draft": s.draft, "n": s.n,
            "options": json.dumps(dict(s.options)), "workload": r.workload,
            "concurrency": r.concurrency, "request_rate": r.request_rate, "repeat": r.repeat,
            "num_prompts": r.num_prompts, "max_tokens": r.max_tokens, "temperature": r.temperature,
            "top_p": r.top_p, "warmup": r.warmup, "status": "pending", "ignore_eos": int(r.ignore_eos),
            "prompt_template": workloads.template(r.workload), "warnings": json.dumps(self.warnings[r.key]),
            "command": spec.command.replace("--port 0", "--port PORT"),
            "env": json.dumps(spec.env), "vllm_version": self.vllm.version,
            "torch_version": self.vllm.torch, "host": json.dumps(host),
            "profile": json.dumps(s.profile.to_table()),
        }

    def _tick(self) -> bool:
        """Called while waiting on a server: keeps the heartbeat fresh; True once cancelled."""
        now = time.time()
        if self.sweep_id is not None and now - getattr(self, "_last_beat", 0.0) > 5.0:
            self._last_beat = now
            self._flush_logs()
            self._flush_telemetry()
            with self.db.conn:
                self.db["sweeps"].update(self.sweep_id, {"heartbeat": now})
        return self.cancelled

    def _on_line(self, stream: str, line: str) -> None:
        self.log_queue.put((time.time(), stream, line))

    def _flush_logs(self) -> None:
        rows = []
        while True:
            try:
                t, stream, line = self.log_queue.get_nowait()
            except queue.Empty:
                break
            rows.append({"run_id": self.log_run_id, "t": t, "stream": stream, "line": line})
        if rows and self.log_run_id is not None:
            with self.db.conn:
                self.db["logs"].insert_all(rows)

    def _flush_telemetry(self) -> None:
        if self.sampler is None or self.log_run_id is None:
            return
        readings = self.sampler.drain()
        if readings:
            with self.db.conn:
                self.db["telemetry"].insert_all([x.row(self.log_run_id) for x in readings])

    def _start_telemetry(self) -> None:
        """GPU readings only where the server runs on this host; an attached server elsewhere
        gets none (this host's GPUs say nothing about it)."""
        local = self.profile.kind != "attach" or launch.is_loopback(self.profile.base_url)
        platform = self.profile.gpu_platform(self.host_platform) if local else "none"
        sources, what = telemetry.sources_for(platform, self.profile.gpus, host=local)
        self.sampler = telemetry.Sampler(sources).start() if sources else None
        self.environment["telemetry"] = what or "none"

    def _fail(self, run_id: int, error: str, log_tail: str) -> None:
        self._flush_logs()
        self._flush_telemetry()
        with self.db.conn:
            self.db["runs"].update(run_id, {"status": "failed", "error": error, "log_tail": log_tail,
                                            "finished": time.time()})
        self.emit({"event": "run_failed", "run": run_id, "error": error})

    # --- the sweep -----------------------------------------------------------------------------
    def run(self) -> dict:
        pending = self.register(self.plan)
        self.start_sweep(len(self.plan.runs), len(pending))
        try:
            self.execute(pending)
        finally:
            self.stop_telemetry()
        return self.finish_sweep()

    def register(self, part: Plan) -> list[Run]:
        """Registers the runs of `part` (the whole plan, or what an adaptive sweep chose to run
        next) in the plan's experiment, and returns those not completed yet."""
        exp_id, ids = self._register(part)
        self.experiment_id = exp_id
        self.ids.update(ids)
        status = {r["id"]: r["status"] for r in store.runs(self.db, "experiment_id = ?", [exp_id])}
        return [r for r in part.runs if status[ids[r.key]] != "completed"]

    def start_sweep(self, runs: int, pending: int) -> None:
        self.t0 = time.time()
        with self.db.conn:
            self.sweep_id = self.db["sweeps"].insert({
                "experiment_id": self.experiment_id, "pid": os.getpid(), "host": platform.node(),
                "events_path": self.events_path, "started": self.t0, "heartbeat": self.t0, "status": "running",
                "runs_total": runs, "runs_pending": pending}).last_pk
        self.emit({"event": "sweep_started", "experiment": self.experiment_id, "db": str(self.db_path),
                   "runs": runs, "pending": pending, "skipped": self.plan.skipped,
                   "warnings": sanity.for_plan(self.plan, self.db)})
        self._start_telemetry()

    def stop_telemetry(self) -> None:
        if self.sampler:
            self.sampler.stop()
            self._flush_telemetry()
            self.sampler = None

    def execute(self, pending: list[Run], total: int | None = None) -> None:
        """One server per configuration, in plan order, for the given runs (see `register`)."""
        total = total or len(pending)
        by_server: dict[str, tuple[Server, list[Run]]] = {}
        for r in pending:
            by_server.setdefault(r.server.key, (r.server, []))[1].append(r)
        for server, todo in by_server.values():
            if self.cancelled:
                break
            self.done += self._serve(server, todo, self.ids, total, self.done)

    def finish_sweep(self, extra: dict | None = None) -> dict:
        counts = {row[0]: row[1] for row in self.db.execute(
            "SELECT status, count(*) FROM runs WHERE experiment_id = ? GROUP BY status", [self.experiment_id])}
        summary = {"event": "sweep_finished", "experiment": self.experiment_id, "seconds": time.time() - self.t0,
                   "completed": counts.get("completed", 0), "failed": counts.get("failed", 0),
                   "cancelled": self.cancelled, **(extra or {})}
        self._end_sweep("cancelled" if self.cancelled else "finished")
        self.emit(summary)
        return summary

    def cancel_running(self) -> None:
        """After an interrupt: the run in flight is marked cancelled (redone on the next resume)."""
        self._flush_logs()
        with self.db.conn:
            self.db.execute("UPDATE runs SET status='cancelled', finished=? WHERE status='running' "
                            "AND experiment_id = ?", [time.time(), self.experiment_id])
        self._end_sweep("cancelled")
        self.emit({"event": "sweep_finished", "cancelled": True})

    def _end_sweep(self, status: str) -> None:
        if self.sweep_id is not None:
            with self.db.conn:
                self.db["sweeps"].update(self.sweep_id, {"finished": time.time(), "status": status})

    def _serve(self, server: Server, todo: list[Run], ids: dict[str, int], total: int, done: int) -> int:
        spec = launch.prepare(server, self.vllm, launch.free_port(), self.host_platform)
        if spec.kind == "attach":
            key_env = server.profile.api_key_env
            srv = launch.AttachedServer(spec, api_key=os.environ.get(key_env) if key_env else None)
        else:
            srv = launch.LocalServer(spec, on_line=self._on_line)
        self.log_run_id = ids[todo[0].key]
        command = spec.command
        with self.db.conn:
            for r in todo:
                self.db["runs"].update(ids[r.key], {"command": command, "argv": json.dumps(spec.vllm_args)})
        self.launches += 1
        self.emit({"event": "server_starting", "run": self.log_run_id, "command": command, "kind": spec.kind})
        try:
            if spec.kind == "attach" and key_env and not srv.api_key:
                raise launch.LaunchError(f"the profile names {key_env} for the server's API key, "
                                         "but that variable is not set")
            srv.start(preexec=_die_with_parent)
            seconds = srv.wait_healthy(self.plan.health_timeout_s, cancelled=self._tick)
            if spec.kind == "attach" and server.served_name not in srv.served_models:
                raise launch.LaunchError(f"the attached server serves {', '.join(srv.served_models) or 'no model'}, "
                                         f"not {server.served_name!r}: set target.served_name to its name")
            self.emit({"event": "server_ready", "seconds": round(seconds, 1), "port": spec.port})
        except launch.LaunchError as exc:
            srv.stop()
            for r in todo:
                self._fail(ids[r.key], str(exc), exc.log_tail)
            return len(todo)
        environment = {**self.environment, "profile": server.profile.name, "kind": spec.kind,
                       "vllm_server": launch.server_version(spec.base_url), **model_runner(list(srv.tail))}
        with self.db.conn:
            for r in todo:
                self.db["runs"].update(ids[r.key], {"environment": json.dumps(environment)})
        seen: set[str] = set()
        try:
            for r in todo:
                if self.cancelled:
                    break
                run_id = ids[r.key]
                self.log_run_id = run_id
                self.emit({"event": "run_started", "run": run_id, "label": r.label,
                           "index": done + 1, "total": total})
                with self.db.conn:
                    self.db["runs"].update(run_id, {"status": "running", "started": time.time()})
                try:
                    summary = asyncio.run(self._measure(run_id, r, srv, seen))
                except RunFailed as exc:
                    self._fail(run_id, str(exc), srv.log_tail())
                    if not srv.alive:
                        for rest in todo[todo.index(r) + 1:]:
                            self._fail(ids[rest.key], "vLLM server died during an earlier run", srv.log_tail())
                        return len(todo)
                else:
                    self._flush_logs()
                    with self.db.conn:
                        self.db["runs"].update(run_id, {**summary, "status": "completed", "finished": time.time()})
                    self.emit({"event": "run_finished", "run": run_id, "label": r.label,
                               "output_tok_s": summary["output_tok_s"], "mal": summary["mal"],
                               "acceptance_rate": summary["acceptance_rate"]})
                done += 1
        finally:
            srv.stop()
            self._flush_logs()
        return len(todo)

    async def _scrape(self, client: httpx.AsyncClient, url: str) -> metrics.Snapshot:
        response = await client.get(url)
        response.raise_for_status()
        return metrics.parse(response.text, time.time())

    async def _measure(self, run_id: int, r: Run, srv: launch.LocalServer, seen: set[str]) -> dict:
        if r.workload not in self._prompts:
            try:
                self._prompts[r.workload] = workloads.load(r.workload)
            except workloads.WorkloadError as exc:
                raise RunFailed(str(exc)) from None
        prompts = workloads.sample(self._prompts[r.workload], r.num_prompts, seed=r.repeat)
        sampling = load.Sampling(r.max_tokens, r.temperature, r.top_p, r.ignore_eos)
        base, key, name = srv.spec.base_url, srv.api_key, r.server.served_name
        metrics_url = base + "/metrics"
        seen_before = any(p.id in seen for p in prompts)
        update = {"prompts_seen_before": int(seen_before)}
        if seen_before and r.server.method == "suffix":
            stored = json.loads(self.db["runs"].get(run_id)["warnings"] or "[]")
            if sanity.SUFFIX_REUSE not in stored:
                update["warnings"] = json.dumps(stored + [sanity.SUFFIX_REUSE])
        with self.db.conn:
            self.db["runs"].update(run_id, update)
        if r.warmup:
            warm = await load.generate(base, key, name, [WARMUP_PROMPT] * r.warmup, sampling,
                                       min(r.warmup, r.concurrency))
            if not all(w.ok for w in warm):
                raise RunFailed(f"warm-up request failed: {next(w.error for w in warm if not w.ok)}")
        async with httpx.AsyncClient(timeout=10.0) as client:
            try:
                before = await self._scrape(client, metrics_url)
            except httpx.HTTPError as exc:
                raise RunFailed(_died(srv) or f"could not read the server's /metrics: {type(exc).__name__}") from None
            t_start = time.perf_counter()
            t_wall0 = time.time()
            state = {"done": 0, "out": 0, "last": before, "rows": []}

            def on_result(res: load.RequestResult) -> None:
                state["done"] += 1
                state["out"] += res.output_tokens
                state["rows"].append(res.row(run_id))

            async def sampler() -> None:
                while True:
                    await asyncio.sleep(self.scrape_interval_s)
                    await self._sample(client, metrics_url, run_id, before, t_start, state, r)

            task = asyncio.create_task(sampler())
            try:
                results = await load.generate(base, key, name, prompts, sampling, r.concurrency,
                                              r.request_rate, seed=r.repeat, on_result=on_result)
            finally:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, httpx.HTTPError):
                    pass
            wall = time.perf_counter() - t_start
            t_wall1 = time.time()
            why = _died(srv, grace_s=3.0 if any(not x.ok for x in results) else 0.0)
            if why:
                raise RunFailed(why)
            try:
                after = await self._sample(client, metrics_url, run_id, before, t_start, state, r)
            except httpx.HTTPError as exc:
                raise RunFailed(_died(srv) or f"could not read the server's /metrics after the run: "
                                f"{type(exc).__name__}") from None
        seen.update(p.id for p in prompts)
        failed = [x for x in results if not x.ok]
        if len(failed) == len(results):
            raise RunFailed(f"every request failed: {failed[0].error}")
        summary = summarize(results, metrics.window(before, after), wall)
        if srv.spec.kind == "attach":
            summary.update(per_request_window(results))
        self._flush_telemetry()
        rows = list(self.db["telemetry"].rows_where("run_id = ? AND t >= ? AND t <= ?",
                                                    [run_id, t_wall0 - 1.0, t_wall1 + 1.0]))
        figures = telemetry.energy(rows, t_wall0, t_wall1)
        if figures.get("energy_j") is not None and summary["output_tokens"]:
            figures["joules_per_token"] = figures["energy_j"] / summary["output_tokens"]
        summary.update(figures)
        return summary

    async def _sample(self, client, url, run_id, before, t_start, state, r: Run) -> metrics.Snapshot:
        snap = await self._scrape(client, url)
        w = metrics.window(before, snap)
        last: metrics.Snapshot = state["last"]
        dt = snap.t - last.t
        interval_gen = snap.total("generation_tokens") - last.total("generation_tokens")
        t = time.perf_counter() - t_start
        sample = {
            "run_id": run_id, "t": t, "drafts": w.drafts, "draft_tokens": w.draft_tokens,
            "accepted": w.accepted, "generation_tokens": w.generation_tokens,
            "output_tokens": state["out"], "mal": w.mean_acceptance_length,
            "acceptance_rate": w.acceptance_rate,
            "output_tok_s": interval_gen / dt if dt > 0 else None,
            "running": snap.gauges.get("running"), "waiting": snap.gauges.get("waiting"),
            "kv_cache_usage": snap.gauges.get("kv_cache_usage"),
        }
        per_position = w.per_position or [None] * len(w.accepted_per_position)
        positions = [{"run_id": run_id, "t": t, "position": i + 1, "accepted": a, "drafts": w.drafts,
                      "acceptance": p} for i, (a, p) in enumerate(zip(w.accepted_per_position, per_position))]
        rows, state["rows"] = state["rows"], []
        self._flush_logs()
        self._flush_telemetry()
        with self.db.conn:
            self.db["sweeps"].update(self.sweep_id, {"heartbeat": time.time()})
            self.db["samples"].insert(sample)
            if positions:
                self.db["positions"].insert_all(positions)
            if rows:
                self.db["requests"].insert_all(rows)
        state["last"] = snap
        self.emit({"event": "progress", "run": run_id, "done": state["done"], "total": r.num_prompts,
                   "t": round(t, 2), "output_tok_s": sample["output_tok_s"], "mal": sample["mal"]})
        return snap


class RunFailed(Exception):
    pass


def _died(srv: launch.LocalServer, grace_s: float = 3.0) -> str | None:
    """Why the server is gone, or None while it runs. The grace covers a killed server that is not
    reaped yet: a process with gigabytes mapped takes a moment to exit, on a busy machine longer."""
    if srv.proc is None:  # an attached server: no process of ours to watch
        return None if srv.alive else f"the attached server at {srv.spec.base_url} stopped answering"
    try:
        srv.proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        return None
    return "vLLM server died during the run: " + (launch.reason_from_log(list(srv.tail))
                                                  or f"exit code {srv.proc.returncode}")
