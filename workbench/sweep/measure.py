"""One measured run against a running server: the warm-up, the window, the scrapes that sample it.

The requests come from the load generator's own processes (`workbench.load.pool`), so this
process's scrapes, database writes and telemetry never delay a request being timed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

import httpx

from workbench import events, launch, load, metrics
from workbench.load import pool, workloads
from workbench.analysis import alarms
from workbench.errors import DraftbenchError
from workbench.metrics import steady_state
from workbench.plan import Run, sanity
from workbench.sweep import app_cpu
from workbench.sweep.outbox import Record
from workbench.sweep.rows import PositionRow, RunSummary, SampleRow
from workbench.sweep.window import per_request_window, prefix_cache, spans, summarize

WARMUP_PROMPT = workloads.Prompt("warmup", "warmup", "Say hello in one short sentence.")
# Above this many cores on average, the client's own work may slow the requests it times.
CLIENT_CORES_WARNING = 0.5


class Measurement:
    """The measured runs against one running server. Its job (workbench.sweep.job.ServerJob) makes
    one per server and hands it everything it uses: it reads nothing from the database and knows
    nothing of the job. `record` is the job's Recorder-shaped sender (workbench.sweep.outbox)."""

    def __init__(self, srv: launch.LocalServer | launch.AttachedServer, clients: pool.ClientPool, record: Record,
                 emit: events.Emit, *, sweep_id: int, scrape_interval_s: float, app: app_cpu.Watched | None,
                 prompts: dict[str, list[workloads.Prompt]], warnings: dict[int, list[str]],
                 before_sample: Callable[[], None]) -> None:
        self.srv = srv
        self.clients = clients
        self.record = record
        self.emit = emit
        self.sweep_id = sweep_id
        self.scrape_interval_s = scrape_interval_s
        self.app = app
        # The sweep's workloads, shared by its jobs: one read (or download) per workload.
        self.prompts = prompts
        self.warnings = {k: list(v) for k, v in warnings.items()}
        # The job's housekeeping (its log lines and GPU readings so far), written before each sample.
        self.before_sample = before_sample
        # The prompts this server has answered: a repeat of one tells suffix decoding the answer.
        self.seen: set[str] = set()
        # The concurrencies this server has run a window or warm-up at: a later run at one of them
        # (the next repeat) finds the server warm and its batch sizes run, so it needs no warm-up.
        self.warmed: set[int] = set()

    async def measure(self, run_id: int, r: Run) -> Measured:
        """The run's figures, why it is partial (None: every request answered), and the wall-clock
        span of its window (its energy is computed from the job's GPU readings over that span);
        raises RunFailed."""
        srv, seen = self.srv, self.seen
        if r.workload not in self.prompts:
            try:
                self.prompts[r.workload] = workloads.load(r.workload)
            except workloads.WorkloadError as exc:
                raise RunFailed(str(exc)) from None
        prompts = workloads.sample(self.prompts[r.workload], r.num_prompts, seed=r.repeat)
        sampling = load.Sampling(r.max_tokens, r.temperature, r.top_p, r.ignore_eos)
        metrics_url = srv.spec.base_url + "/metrics"
        seen_before = any(p.id in seen for p in prompts)
        warnings = None
        if seen_before and r.server.method == "suffix":
            stored = self.warnings.get(run_id, [])
            if sanity.SUFFIX_REUSE not in stored:
                warnings = stored + [sanity.SUFFIX_REUSE]
                self.warnings[run_id] = warnings
        self.record.prompts_seen(run_id, seen_before, warnings)
        clients = self.clients
        if r.warmup and r.concurrency not in self.warmed:
            # At the run's own concurrency, so the batch sizes the window will use have been run.
            # Once per server and concurrency: the first requests of a fresh server are the slow
            # ones (on a 2-core CPU the warm-ups of every repeat took 3.5 s of each 20 s run).
            count = max(r.warmup, r.concurrency)
            warm = await asyncio.to_thread(clients.run, [WARMUP_PROMPT] * count, sampling, r.concurrency)
            if not all(w.ok for w in warm.results):
                raise RunFailed(f"warm-up request failed: {next(w.error for w in warm.results if not w.ok)}")
            self.warmed.add(r.concurrency)
        if r.warmup and r.server.method != "suffix":
            # Every prompt of the window once, for one token: its prefix is then in the cache for
            # this run as for every other run and repeat on any server, so no window pays for a
            # cold cache that another did not (vLLM's /reset_prefix_cache exists only in its dev
            # mode, and an attached server's cache is not ours to reset). Suffix decoding is left
            # out: it would learn the answers' first tokens from this pass.
            primer = load.Sampling(1, r.temperature, r.top_p)
            await asyncio.to_thread(clients.run, prompts, primer, r.concurrency)
        async with httpx.AsyncClient(timeout=10.0) as client:
            try:
                before = await _scrape(client, metrics_url)
            except httpx.HTTPError as exc:
                raise RunFailed(_died(srv) or f"could not read the server's /metrics: {type(exc).__name__}") from None
            t_start = time.perf_counter()
            t_wall0 = time.time()
            state: dict[str, Any] = {"done": 0, "out": 0, "last": before, "rows": [], "counts": []}

            def on_result(res: load.RequestResult) -> None:
                # Called on the pool's thread; list appends and the swap in _sample are atomic.
                state["done"] += 1
                state["out"] += res.output_tokens
                state["rows"].append(res.row(run_id))

            async def sampler() -> None:
                while True:
                    await asyncio.sleep(self.scrape_interval_s)
                    await self._sample(client, metrics_url, run_id, before, t_start, state, r)

            task = asyncio.create_task(sampler())
            # The app's CPU over the same span the client processes time their own.
            app_window = app_cpu.Window(self.app)
            try:
                outcome = await asyncio.to_thread(clients.run, prompts, sampling, r.concurrency, r.request_rate,
                                                  r.repeat, on_result)
            except RuntimeError as exc:  # the load generator itself failed (a client process died)
                raise RunFailed(str(exc)) from None
            finally:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, httpx.HTTPError):
                    pass
            app_cpu_s = app_window.stop()
            results = outcome.results
            wall = outcome.wall_s
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
        # A window with answers warmed the server at its concurrency; one that had none did not.
        self.warmed.add(r.concurrency)
        win = metrics.window(before, after)
        figures = summarize(results, win, wall)
        figures.update(client_cpu_s=outcome.client_cpu_s, client_processes=outcome.processes, app_cpu_s=app_cpu_s)
        figures.update(steady_state.figures(spans(results), r.concurrency, wall))
        figures.update(prefix_cache(win))
        partial = None
        if failed:
            partial = f"{len(failed)} of {len(results)} requests failed; the first: {failed[0].error}"
        found = window_warnings(outcome.client_cpu_s, app_cpu_s, wall)
        if found:
            figures["warnings"] = json.dumps(self.warnings.get(run_id, []) + found)
        own = per_request_window(results) if srv.spec.kind == "attach" else {}
        figures.update(own)
        # Where vLLM's per-request figures replaced the counters (other clients' traffic is in
        # them), the generation counter cannot be set against them.
        raised = alarms.check(r.server.method, figures["drafts"], figures["accepted"],
                              None if own else win.generation_tokens, win.requests_finished, state["counts"],
                              imposed=r.server.what_if)
        return Measured(RunSummary(**figures, alarms=alarms.encode(raised)), partial, (t_wall0, t_wall1))

    async def _sample(self, client: httpx.AsyncClient, url: str, run_id: int, before: metrics.Snapshot, t_start: float,
                      state: dict[str, Any], r: Run) -> metrics.Snapshot:
        snap = await _scrape(client, url)
        w = metrics.window(before, snap)
        last: metrics.Snapshot = state["last"]
        dt = snap.t - last.t
        interval_gen = snap.total("generation_tokens") - last.total("generation_tokens")
        t = time.perf_counter() - t_start
        sample = SampleRow(
            run_id=run_id, t=t, drafts=w.drafts, draft_tokens=w.draft_tokens, accepted=w.accepted,
            generation_tokens=w.generation_tokens, output_tokens=state["out"], mal=w.mean_acceptance_length,
            acceptance_rate=w.acceptance_rate, output_tok_s=interval_gen / dt if dt > 0 else None,
            running=snap.gauges.get("running"), waiting=snap.gauges.get("waiting"),
            kv_cache_usage=snap.gauges.get("kv_cache_usage"))
        per_position: Sequence[float | None] = w.per_position or [None] * len(w.accepted_per_position)
        positions = [PositionRow(run_id=run_id, t=t, position=i + 1, accepted=a, drafts=w.drafts, acceptance=p)
                     for i, (a, p) in enumerate(zip(w.accepted_per_position, per_position))]
        state["counts"].append((t, w.drafts, w.accepted))
        rows, state["rows"] = state["rows"], []
        self.before_sample()
        self.record.sample(self.sweep_id, sample, positions, rows)
        state["last"] = snap
        self.emit(events.Progress(run=run_id, done=state["done"], total=r.num_prompts, t=round(t, 2),
                                  output_tok_s=sample.output_tok_s, mal=sample.mal))
        return snap


def window_warnings(client_cpu_s: float, app_cpu_s: float | None, wall_s: float) -> list[str]:
    """What the measuring itself may have cost the run: a busy load generator, a busy app."""
    out = []
    cores = client_cpu_s / wall_s if wall_s > 0 else 0.0
    if cores > CLIENT_CORES_WARNING:
        out.append(f"the load generator used {cores:.2f} CPU cores on average during the window (more than "
                   f"{CLIENT_CORES_WARNING}): the client may have limited the measured throughput")
    app = app_cpu.warning(app_cpu_s, wall_s)
    if app:
        out.append(app)
    return out


class RunFailed(DraftbenchError):  # noqa: N818 - a signal, not an error
    pass


@dataclass(frozen=True)
class Measured:
    """A run measured to the end: its figures, why it is only partial (some requests failed; None
    when every one answered), and the wall-clock span of its window."""
    summary: RunSummary
    partial: str | None
    span: tuple[float, float]


async def _scrape(client: httpx.AsyncClient, url: str) -> metrics.Snapshot:
    response = await client.get(url)
    response.raise_for_status()
    return metrics.parse(response.text, time.time())


def _died(srv: launch.LocalServer | launch.AttachedServer, grace_s: float = 3.0) -> str | None:
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
