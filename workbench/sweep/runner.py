"""Executes a plan: one vLLM server per configuration, measured runs against it, all into SQLite.

Each configuration's runs are one job (workbench.sweep.job), handed to the executor the runner
was given (workbench.sweep.executor): by default a thread per GPU slot (workbench.host.slots), one
server per slot at a time; with one slot, the serial sweep, the configurations run one after the
other in plan order. One writer thread applies what every job writes (workbench.sweep.outbox).

Resumable: runs already completed for the same plan in the same database are skipped; a run that
was interrupted (runner killed) is redone from scratch. Progress goes out as JSON lines.
"""

from __future__ import annotations

from typing import Any
import contextlib
import json
import os
import platform
import time

from workbench import events, launch, methods, store
from workbench.analysis import lossless
from workbench.host import engine, gpus
from workbench.load import workloads
from workbench.plan import Plan, Run, knownbad, sanity
from workbench.plan.profiles import Profile
from workbench.sweep import app_cpu, baseline, outbox
from workbench.sweep.executor import Executor, ThreadExecutor
from workbench.sweep.job import Context, Work
from workbench.sweep.measure import WARMUP_PROMPT, RunFailed
from workbench.sweep.window import model_runner, per_request_window, summarize

# A /metrics scrape is rendered on the API server's event loop, the loop that streams every
# answer: about 10 ms on the CPU build's idle server (bench/gpu_fidelity.py prints it for a GPU
# host). Once a second keeps that near 1% of a front end that is itself the bottleneck at high
# concurrency; the Live page needs no more.
SCRAPE_INTERVAL_S = 1.0
# Names other modules and tests read from here.
__all__ = ["Runner", "RunFailed", "WARMUP_PROMPT", "model_runner", "per_request_window", "summarize", "host_info",
           "load_workloads", "SCRAPE_INTERVAL_S"]


def host_info() -> dict[str, Any]:
    platform_name, devices = gpus.detect()
    return {"hostname": platform.node(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "accelerator": platform_name,
            "gpus": [d.name for d in devices]}


def load_workloads(plan: Plan) -> dict[str, list[workloads.Prompt]]:
    """Every workload of the plan read (benchmarks fetched) before any server starts, so an
    unreachable Hub or a broken file is reported up front; raises WorkloadError."""
    return {name: workloads.load(name) for name in dict.fromkeys(r.workload for r in plan.runs)}


def failure_reason(exc: BaseException) -> str:
    """The one line that says why a sweep stopped, as `draftbench` says it on stderr."""
    if isinstance(exc, store.DatabaseError):
        return f"the results database cannot be used: {store.explain(exc)}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Runner:
    def __init__(self, plan: Plan, db_path: str, vllm: engine.VllmInstall | None = None,
                 emit: events.Emit | None = None, scrape_interval_s: float = SCRAPE_INTERVAL_S,
                 events_path: str | None = None, prompts: dict[str, list[workloads.Prompt]] | None = None,
                 executor: Executor | None = None, servings: launch.Servings | None = None):
        self.plan = plan
        self.db_path = db_path
        self.profile = plan.runs[0].server.profile if plan.runs else Profile()
        self.vllm = vllm or engine.probe(self.profile.python)
        # The vLLM each server runs (`launch.probed`); where not given, what is known without asking.
        self.servings: launch.Servings = dict(servings or {})
        self.host_platform = "none"
        self.environment: dict[str, Any] = {}
        self.emit = emit or events.Writer()
        self.scrape_interval_s = scrape_interval_s
        self.db = store.open_db(db_path)
        store.check_integrity(self.db, db_path)
        self.record = store.Recorder(self.db)
        # Where the servers run: threads over this host's GPU slots unless told otherwise.
        self.executor: Executor = executor or ThreadExecutor()
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
        known = knownbad.for_runs(part, self.host_platform, self.vllm.version)
        self.warnings = {key: w + known.get(key, []) for key, w in sanity.for_runs(part, self.db).items()}
        exp_id = self.record.experiment(part.name, part.hash, part.text, part.path, host)
        # A run interrupted or failed before loses everything it wrote, and runs again.
        ids = self.record.register_runs(
            exp_id, [r.key for r in part.runs],
            lambda index: self._run_row(exp_id, part.seq(index, part.runs[index]), part.runs[index], host))
        return exp_id, ids

    def _run_row(self, exp_id: int, seq: int, r: Run, host: dict[str, Any]) -> dict[str, Any]:
        s = r.server
        spec = launch.prepare(s, self.vllm, 0, self.host_platform, servings=self.servings)
        serving = launch.serving_of(s, self.vllm, self.host_platform, self.servings)
        return {
            "experiment_id": exp_id, "key": r.key, "seq": seq, "server_key": s.key,
            "target": s.target, "method": s.method, "draft": s.draft, "n": s.n,
            "options": json.dumps(dict(s.options)), "workload": r.workload,
            "concurrency": r.concurrency, "request_rate": r.request_rate, "repeat": r.repeat,
            "num_prompts": r.num_prompts, "max_tokens": r.max_tokens, "temperature": r.temperature,
            "top_p": r.top_p, "warmup": r.warmup, "status": "pending", "ignore_eos": int(r.ignore_eos),
            "prompt_template": workloads.template(r.workload), "warnings": json.dumps(self.warnings[r.key]),
            "command": launch.shown_command(spec),
            # The versions of the vLLM that serves (an image's for a docker server), not this host's.
            "env": json.dumps(spec.env), "vllm_version": serving.version,
            "transformers_version": serving.transformers,
            "draft_sample_method": methods.draft_sample_method(s.speculative_config()),
            "torch_version": self.vllm.torch if s.profile.kind == "local" else None, "host": json.dumps(host),
            "profile": json.dumps(s.profile.to_table()),
            "what_if": int(s.what_if), "imposed": s.imposed_json(),
        }

    # --- the sweep -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        pending = self.register(self.plan)
        self.start_sweep(len(self.plan.runs), len(pending))
        first = [r for r in pending if baseline.is_baseline(r)]
        rest = [r for r in pending if not baseline.is_baseline(r)]
        if not (first and rest and self._serial()):
            # Servers at once (or nothing to wait for): the baseline runs beside the others, and
            # a failed one is still tried again at the end.
            self.execute(pending)
            self.retry_baseline(len(pending))
            return self.finish_sweep()
        self.execute(first, len(pending))
        self.retry_baseline(len(pending))
        note = None
        if not self.cancelled and self.plan.without_baseline == "skip":
            assert self.experiment_id is not None  # register() came first
            missing = baseline.missing(self.plan, store.runs_of_experiment(self.db, self.experiment_id))
            waiting = baseline.held(rest, missing)
            if waiting:
                tries = 1 + self.plan.baseline_retries
                self.record.runs_held([self.ids[r.key] for r in waiting], baseline.reason(missing, tries))
                note = baseline.note(len(waiting), missing, tries)
                rest = [r for r in rest if r not in waiting]
        self.execute(rest, len(pending))
        return self.finish_sweep({"note": note} if note else None)

    def _serial(self) -> bool:
        """One server at a time: the baseline can finish before any speculative server starts."""
        slots = getattr(self.executor, "slots", None)
        return isinstance(self.executor, ThreadExecutor) and slots is not None and len(slots) == 1

    def retry_baseline(self, total: int) -> None:
        """Failed baseline runs tried again, up to the plan's `baseline_retries` more times, each
        time on a server of their own (the one that failed may have been killed or never started)."""
        for _ in range(self.plan.baseline_retries):
            if self.cancelled or self.experiment_id is None:
                return
            again = baseline.failed(self.plan, store.runs_of_experiment(self.db, self.experiment_id))
            if not again:
                return
            # Registered again: what the failed attempt wrote goes, and they are pending.
            self.register(self.plan.part(again))
            self.execute(again, max(total, self.done + len(again)))

    def register(self, part: Plan) -> list[Run]:
        """Registers the runs of `part` (the whole plan, or what an adaptive sweep chose to run
        next) in the plan's experiment, and returns those not completed yet."""
        exp_id, ids = self._register(part)
        self.experiment_id = exp_id
        self.ids.update(ids)
        status = {r.id: r.status for r in store.runs_of_experiment(self.db, exp_id)}
        return [r for r in part.runs if status[ids[r.key]] not in ("completed", "skipped")]

    def start_sweep(self, runs: int, pending: int) -> None:
        self.t0 = time.time()
        assert self.experiment_id is not None  # register() came first
        self.sweep_id = self.record.sweep_started(self.experiment_id, self.events_path, self.t0, runs, pending)
        self.emit(events.SweepStarted(experiment=self.experiment_id, db=str(self.db_path), runs=runs,
                                      pending=pending, skipped=self.plan.skipped,
                                      warnings=self._plan_warnings()))

    def _plan_warnings(self) -> list[str]:
        """The plan's distinct warnings, the known ROCm problems of its servers included."""
        known = knownbad.for_runs(self.plan, self.host_platform, self.vllm.version)
        return list(dict.fromkeys(sanity.for_plan(self.plan, self.db) + [w for ws in known.values() for w in ws]))

    def works(self, pending: list[Run], total: int | None = None) -> list[Work]:
        """The given runs (see `register`) as one piece of work per server configuration, in plan
        order, each run numbered by its place in the sweep."""
        total = total or len(pending)
        assert self.experiment_id is not None  # register() came first
        groups: dict[str, list[Run]] = {}
        for r in pending:
            groups.setdefault(r.server.key, []).append(r)
        stored = {row.id: json.loads(row.warnings or "[]")
                  for row in store.runs_of_experiment(self.db, self.experiment_id)}
        index: dict[str, int] = {}
        for runs in groups.values():
            for r in runs:
                index[r.key] = self.done + len(index) + 1
        self.done += len(pending)
        return [Work(runs[0].server, runs, {r.key: self.ids[r.key] for r in runs},
                     {self.ids[r.key]: stored.get(self.ids[r.key], []) for r in runs}, index, total,
                     (k, len(groups)))
                for k, runs in enumerate(groups.values(), 1)]

    def context(self) -> Context:
        assert self.sweep_id is not None  # start_sweep() came first
        return Context(self.vllm, self.host_platform, self.environment, self.sweep_id, self.plan.health_timeout_s,
                       self.scrape_interval_s, self._prompts, app=app_cpu.from_env(),
                       auto_repeats=self.plan.auto_repeats, servings=self.servings)

    def execute(self, pending: list[Run], total: int | None = None) -> None:
        """Every server configuration of the given runs, through the runner's executor."""
        works = self.works(pending, total)
        if not works or self.cancelled:
            return
        writer = outbox.Writer(self.db_path, self.emit).start()
        try:
            self.launches += self.executor.run(works, self.context(), writer)
        except KeyboardInterrupt:
            self.cancelled = True  # the executor stopped what was in flight
            raise
        finally:
            writer.close()

    def stop_all(self) -> None:
        """Stop: every server in flight is stopped at once; no new one starts."""
        self.cancelled = True
        self.executor.stop()

    def finish_sweep(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.experiment_id is not None  # register() came first
        if self.cancelled:  # stopped (stop_all): the runs that were in flight are redone on a resume
            self.record.cancel_running(self.experiment_id)
        self.check_lossless()
        counts = store.status_counts(self.db, self.experiment_id)
        summary = events.SweepFinished(experiment=self.experiment_id, seconds=time.time() - self.t0,
                                       completed=counts[store.RunStatus.COMPLETED], failed=counts[store.RunStatus.FAILED],
                                       cancelled=self.cancelled, **(extra or {}))
        self._end_sweep("cancelled" if self.cancelled else "finished")
        self.emit(summary)
        return summary.to_json()

    def check_lossless(self) -> None:
        """Every greedy speculative run of the experiment against its baseline's answers, and every
        run's task accuracy (workbench.analysis.lossless), stored with the runs: at the end, since
        a baseline may run after the runs it is compared with."""
        if self.experiment_id is None:
            return
        rows = store.runs_of_experiment(self.db, self.experiment_id)
        self.record.lossless(lossless.figures_for(rows, self._answers))

    def _answers(self, run_id: int) -> lossless.Answers:
        """A run's stored answers as the check compares them: by request (idx, prompt id)."""
        return {(a.idx, a.prompt_id): (a.text, a.correct) for a in store.answers(self.db, run_id)}

    def fail(self, exc: BaseException) -> None:
        """The sweep stopped on `exc`: its end event says why in one line, so whoever follows
        the events (the app, a remote stream) learns it with the sweep's end. The database is not
        touched: it may be what failed."""
        event = events.SweepFinished(experiment=self.experiment_id, seconds=time.time() - self.t0,
                                     error=failure_reason(exc))
        with contextlib.suppress(OSError):  # an events file on the full disk: the exception still says it
            self.emit(event)

    def cancel_running(self) -> None:
        """After an interrupt: the runs in flight are marked cancelled (redone on the next resume)."""
        self.record.cancel_running(self.experiment_id)
        self._end_sweep("cancelled")
        self.emit(events.SweepFinished(cancelled=True))

    def _end_sweep(self, status: str) -> None:
        if self.sweep_id is not None:
            self.record.sweep_ended(self.sweep_id, status)
