"""The load generator in its own processes, so the runner's scrapes, database writes and telemetry
never share an event loop (or a core) with the requests being timed.

A pool is started once per measured run: each worker process imports the client, then waits for
a job. A job is a share of the prompts and of the concurrency (and of the request rate: the sum
of Poisson arrivals is a Poisson arrival). The parent opens the window when it releases the job,
so process start-up and imports never fall inside it. Each worker reports every request as it
finishes and, at the end, the CPU time it used for the job: the client's own cost, stored with
the run.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import queue
import signal
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

from workbench.host import process
from workbench.load import client
from workbench.load.workloads import Prompt

_LOOP: Callable[[], asyncio.AbstractEventLoop] | None
try:
    # libuv's event loop: per streamed token it costs about 40% less client CPU at concurrency 1
    # and half at 16 than asyncio's (bench/client_ceiling.py --step-ms), which is what a client
    # spends at the low concurrencies where each token wakes the loop on its own.
    from uvloop import new_event_loop as _LOOP  # noqa: N812 - a constant: the loop factory every worker uses
except ImportError:  # no uvloop on Windows: asyncio's loop
    _LOOP = None

# One process keeps up with about 100k output tok/s on a modern core (bench/client_ceiling.py);
# more processes only help at high concurrency, where one event loop holds many streams.
STREAMS_PER_PROCESS = 128


def processes_for(concurrency: int, cpus: int | None = None) -> int:
    """How many client processes a concurrency gets: one per STREAMS_PER_PROCESS streams, never
    more than half the host's cores (the server's own front end needs the rest)."""
    cpus = cpus or os.cpu_count() or 2
    return max(1, min(math.ceil(concurrency / STREAMS_PER_PROCESS), cpus // 2))


@dataclass(frozen=True)
class Outcome:
    results: list[client.RequestResult]
    wall_s: float          # first request sent to last response read, as `vllm bench serve` times it
    client_cpu_s: float    # CPU time of the client processes over the job (user + system)
    processes: int


def _worker(jobs: Any, out: Any, base_url: str, api_key: str | None, model: str, timeout_s: float) -> None:
    # A SIGKILLed runner cannot close its pool (daemon processes are only ended on a clean exit),
    # so the kernel ends each worker instead of leaving it waiting for a job for ever.
    process.die_with_parent()
    # Ctrl-C (or `timeout -s INT`) reaches the whole process group: the runner handles it (stops its
    # server, marks the run, closes this pool), so a worker left to die of it would only print a
    # KeyboardInterrupt traceback into the run's log. Ignored, asyncio.Runner leaves it ignored too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out.put(("ready", os.getpid()))
    while True:
        job = jobs.get()
        if job is None:
            return
        prompts, sampling, concurrency, rate, seed = job
        cpu0 = time.process_time()

        def report(r: client.RequestResult) -> None:
            out.put(("result", asdict(r)))

        t0 = time.perf_counter()
        try:
            with asyncio.Runner(loop_factory=_LOOP) as loop:
                loop.run(client.generate(base_url, api_key, model, [p for _, p in prompts], sampling, concurrency,
                                         rate, seed, report, timeout_s, indices=[i for i, _ in prompts]))
        except Exception as exc:  # noqa: BLE001 - a worker must always answer, or the parent would wait for ever
            out.put(("error", f"{type(exc).__name__}: {exc}"[:300]))
        # perf_counter is CLOCK_MONOTONIC on Linux, one clock for every process of the host.
        out.put(("done", (time.process_time() - cpu0, t0, time.perf_counter())))


class ClientPool:
    """`processes` client processes against one server; use as a context manager."""

    def __init__(self, base_url: str, api_key: str | None, model: str, processes: int = 1, timeout_s: float = 600.0):
        self.processes = max(1, processes)
        # spawn, not fork: the runner has threads (telemetry), and a forked copy of them is unsafe.
        ctx = multiprocessing.get_context("spawn")
        self._out = ctx.Queue()
        self._jobs = [ctx.Queue() for _ in range(self.processes)]
        self._procs = [ctx.Process(target=_worker, args=(jobs, self._out, base_url, api_key, model, timeout_s),
                                   daemon=True, name=f"draftbench-client-{i}")
                       for i, jobs in enumerate(self._jobs)]

    def __enter__(self) -> "ClientPool":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> "ClientPool":
        """Starts the processes and waits until each has imported the client."""
        for p in self._procs:
            p.start()
        ready = 0
        deadline = time.monotonic() + 120
        while ready < self.processes:
            kind, _ = self._get(deadline, "start")
            ready += kind == "ready"
        return self

    def close(self) -> None:
        for jobs in self._jobs:
            try:
                jobs.put(None)
            except (OSError, ValueError):
                pass
        for p in self._procs:
            if p.pid is None:  # never started
                continue
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)

    def _get(self, deadline: float, what: str) -> Any:
        while True:
            try:
                return self._out.get(timeout=0.5)
            except queue.Empty:
                dead = [p for p in self._procs if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"a load-generator process died (exit code {dead[0].exitcode}) during {what}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the load generator did not {what} in time")

    def run(self, prompts: list[Prompt], sampling: client.Sampling, concurrency: int,
            request_rate: float | None = None, seed: int = 0,
            on_result: Callable[[client.RequestResult], None] | None = None,
            timeout_s: float = 3600.0) -> Outcome:
        """Send every prompt once (blocking). Prompts go round-robin to the processes, the
        concurrency and the rate are split between them, and results come back in prompt order."""
        n = min(self.processes, max(1, concurrency), max(1, len(prompts)))
        shares = [concurrency // n + (1 if i < concurrency % n else 0) for i in range(n)]
        t0 = time.perf_counter()
        for i in range(n):
            mine = [(idx, p) for idx, p in enumerate(prompts) if idx % n == i]
            rate = request_rate / n if request_rate else None
            self._jobs[i].put((mine, sampling, shares[i], rate, seed * 1000 + i))
        results: list[client.RequestResult] = []
        cpu = 0.0
        spans = []
        finished = 0
        error = None
        deadline = time.monotonic() + timeout_s
        while finished < n:
            kind, payload = self._get(deadline, "finish its requests")
            if kind == "result":
                r = client.RequestResult(**payload)
                results.append(r)
                if on_result:
                    on_result(r)
            elif kind == "done":
                finished += 1
                cpu += payload[0]
                spans.append(payload[1:])
            elif kind == "error":
                error = payload
        wall = max(e for _, e in spans) - min(s for s, _ in spans) if spans else time.perf_counter() - t0
        if error and not results:
            raise RuntimeError(f"the load generator failed: {error}")
        results.sort(key=lambda r: r.idx)
        return Outcome(results, wall, cpu, n)
