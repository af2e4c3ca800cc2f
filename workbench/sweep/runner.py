"""Executes a plan: one vLLM server per configuration, measured runs against it, all into SQLite.

Resumable: runs already completed for the same plan in the same database are skipped; a run that
was interrupted (runner killed) is redone from scratch. Progress goes out as JSON lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import queue
import time

from workbench import events, launch, store
from workbench.host import engine, gpus, process
from workbench.load import pool, workloads
from workbench.metrics import telemetry
from workbench.plan import Plan, Run, Server, sanity
from workbench.plan.profiles import Profile
from workbench.sweep.measure import WARMUP_PROMPT, Measurement, RunFailed
from workbench.sweep.window import model_runner, per_request_window, summarize

SCRAPE_INTERVAL_S = 0.5
# Names other modules and tests read from here.
__all__ = ["Runner", "RunFailed", "WARMUP_PROMPT", "model_runner", "per_request_window", "summarize", "host_info",
           "load_workloads", "SCRAPE_INTERVAL_S"]


def host_info() -> dict:
    platform_name, devices = gpus.detect()
    return {"hostname": platform.node(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "accelerator": platform_name,
            "gpus": [d.name for d in devices]}


def load_workloads(plan: Plan) -> dict[str, list[workloads.Prompt]]:
    """Every workload of the plan read (benchmarks fetched) before any server starts, so an
    unreachable Hub or a broken file is reported up front; raises WorkloadError."""
    return {name: workloads.load(name) for name in dict.fromkeys(r.workload for r in plan.runs)}


class Runner(Measurement):
    def __init__(self, plan: Plan, db_path: str, vllm: engine.VllmInstall | None = None,
                 emit: events.Emit | None = None, scrape_interval_s: float = SCRAPE_INTERVAL_S,
                 events_path: str | None = None, prompts: dict[str, list[workloads.Prompt]] | None = None):
        self.plan = plan
        self.db_path = db_path
        self.profile = plan.runs[0].server.profile if plan.runs else Profile()
        self.vllm = vllm or engine.probe(self.profile.python)
        self.host_platform = "none"
        self.environment: dict = {}
        self.sampler: telemetry.Sampler | None = None
        self.emit = emit or events.Writer()
        self.scrape_interval_s = scrape_interval_s
        self.db = store.open_db(db_path)
        store.check_integrity(self.db, db_path)
        self.record = store.Recorder(self.db)
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
        exp_id = self.record.experiment(part.name, part.hash, part.text, part.path, host)
        # A run interrupted or failed before loses everything it wrote, and runs again.
        ids = self.record.register_runs(
            exp_id, [r.key for r in part.runs],
            lambda index: self._run_row(exp_id, part.seq(index, part.runs[index]), part.runs[index], host))
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
            "command": launch.shown_command(spec),
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
            self.record.heartbeat(self.sweep_id, now)
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
            rows.append((t, stream, line))
        if rows and self.log_run_id is not None:
            self.record.log_lines(self.log_run_id, rows)

    def _flush_telemetry(self) -> None:
        if self.sampler is None or self.log_run_id is None:
            return
        readings = self.sampler.drain()
        if readings:
            self.record.telemetry([x.row(self.log_run_id) for x in readings])

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
        self.record.run_failed(run_id, error, log_tail)
        self.emit(events.RunFailed(run=run_id, error=error))

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
        status = {r["id"]: r["status"] for r in store.runs_of_experiment(self.db, exp_id)}
        return [r for r in part.runs if status[ids[r.key]] != "completed"]

    def start_sweep(self, runs: int, pending: int) -> None:
        self.t0 = time.time()
        self.sweep_id = self.record.sweep_started(self.experiment_id, self.events_path, self.t0, runs, pending)
        self.emit(events.SweepStarted(experiment=self.experiment_id, db=str(self.db_path), runs=runs,
                                      pending=pending, skipped=self.plan.skipped,
                                      warnings=sanity.for_plan(self.plan, self.db)))
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
        for k, (server, todo) in enumerate(by_server.values(), 1):
            if self.cancelled:
                break
            self.done += self._serve(server, todo, self.ids, total, self.done, (k, len(by_server)))

    def finish_sweep(self, extra: dict | None = None) -> dict:
        counts = store.status_counts(self.db, self.experiment_id)
        summary = events.SweepFinished(experiment=self.experiment_id, seconds=time.time() - self.t0,
                                       completed=counts.get("completed", 0), failed=counts.get("failed", 0),
                                       cancelled=self.cancelled, **(extra or {}))
        self._end_sweep("cancelled" if self.cancelled else "finished")
        self.emit(summary)
        return summary.to_json()

    def cancel_running(self) -> None:
        """After an interrupt: the run in flight is marked cancelled (redone on the next resume)."""
        self._flush_logs()
        self.record.cancel_running(self.experiment_id)
        self._end_sweep("cancelled")
        self.emit(events.SweepFinished(cancelled=True))

    def _end_sweep(self, status: str) -> None:
        if self.sweep_id is not None:
            self.record.sweep_ended(self.sweep_id, status)

    def _serve(self, server: Server, todo: list[Run], ids: dict[str, int], total: int, done: int,
               place: tuple[int, int] = (None, None)) -> int:
        spec = launch.prepare(server, self.vllm, launch.free_port(), self.host_platform)
        if spec.kind == "attach":
            key_env = server.profile.api_key_env
            srv = launch.AttachedServer(spec, api_key=os.environ.get(key_env) if key_env else None)
        else:
            srv = launch.LocalServer(spec, on_line=self._on_line)
        self.log_run_id = ids[todo[0].key]
        command = spec.command
        self.record.server_command([ids[r.key] for r in todo], command, spec.vllm_args)
        self.launches += 1
        self.emit(events.ServerStarting(run=self.log_run_id, command=command, kind=spec.kind, index=place[0],
                                        servers=place[1]))
        try:
            if spec.kind == "attach" and key_env and not srv.api_key:
                raise launch.LaunchError(f"the profile names {key_env} for the server's API key, "
                                         "but that variable is not set")
            # A SIGKILLed runner cannot stop its server; the kernel does it instead.
            srv.start(preexec=process.die_with_parent)
            seconds = srv.wait_healthy(self.plan.health_timeout_s, cancelled=self._tick)
            if spec.kind == "attach" and server.served_name not in srv.served_models:
                raise launch.LaunchError(f"the attached server serves {', '.join(srv.served_models) or 'no model'}, "
                                         f"not {server.served_name!r}: set target.served_name to its name")
            self.emit(events.ServerReady(seconds=round(seconds, 1), port=spec.port))
        except launch.LaunchError as exc:
            srv.stop()
            for r in todo:
                self._fail(ids[r.key], str(exc), exc.log_tail)
            return len(todo)
        environment = {**self.environment, "profile": server.profile.name, "kind": spec.kind,
                       "vllm_server": launch.server_version(spec.base_url), **model_runner(list(srv.tail))}
        self.record.server_environment([ids[r.key] for r in todo], environment)
        seen: set[str] = set()
        self.clients = pool.ClientPool(spec.base_url, srv.api_key, server.served_name,
                                       pool.processes_for(max(r.concurrency for r in todo)))
        try:
            self.clients.start()
            for r in todo:
                if self.cancelled:
                    break
                run_id = ids[r.key]
                self.log_run_id = run_id
                self.emit(events.RunStarted(run=run_id, label=r.label, index=done + 1, total=total))
                self.record.run_started(run_id)
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
                    partial = summary.pop("partial_error", None)
                    if partial:
                        self.record.run_partial(run_id, summary, partial)
                        self.emit(events.RunFailed(run=run_id, error=f"partial: {partial}"))
                    else:
                        self.record.run_completed(run_id, summary)
                    self.emit(events.RunFinished(run=run_id, label=r.label, output_tok_s=summary["output_tok_s"],
                                                 mal=summary["mal"], acceptance_rate=summary["acceptance_rate"]))
                done += 1
        except RuntimeError as exc:  # the load generator's processes could not start
            for r in todo:
                if store.run(self.db, ids[r.key])["status"] in ("pending", "running"):
                    self._fail(ids[r.key], str(exc), "")
        finally:
            self.clients.close()
            srv.stop()
            self._flush_logs()
        return len(todo)
