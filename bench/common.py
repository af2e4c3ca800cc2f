"""Shared by the benchmarks: machine details, a table printer, and a demo server to measure against."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from workbench import launch, plan
from workbench.checkpoints import demo
from workbench.host import engine  # noqa: E402


# Every benchmark takes --smoke: a seconds-long run on the tiniest input, with no GPU and no vLLM
# server, run by the fast tier (tests/test_bench_smoke.py) so that a benchmark cannot rot unseen.
# What needs a real server or a GPU is skipped with a line that says so; the rest (argument parsing,
# the plan, the figures and the table) runs on synthetic or recorded data.
SMOKE_HELP = "a seconds-long check on the tiniest input, no GPU and no vLLM server (what needs one is skipped)"


def skipped(what: str) -> None:
    print(f"smoke: skipped {what}", flush=True)


def table(title: str, header: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    lines = [f"\n## {title}", "",
             "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
             "| " + " | ".join("-" * w for w in widths) + " |"]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def machine() -> list[list[str]]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kib = int(next(line for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal")).split()[1])
        mem = f"{kib / 1024 ** 2:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    vllm = engine.probe()
    import sqlite3

    from PySide6 import QtCore

    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return [["CPU", cpu], ["cores", str(os.cpu_count())], ["RAM", mem], ["OS", platform.platform()],
            ["Python", platform.python_version()], ["vLLM", f"{vllm.version} ({vllm.build} build)"],
            ["torch", str(vllm.torch)], ["Qt", QtCore.qVersion()], ["SQLite", sqlite3.sqlite_version],
            ["load average at start (1/5/15 min)", load]]


def server_config(method: str = "baseline", n: int | None = None, draft: str | None = None,
                  enforce_eager: bool = True, env: tuple = ()) -> plan.Server:
    models = demo.ensure()
    draft_dir = str(models[draft]) if draft else None
    return plan.Server(target=str(models[demo.TARGET.name]), served_name="smollm2", method=method, n=n,
                       draft=draft_dir, options=(), max_model_len=2048, dtype="bfloat16", extra_args=(),
                       env=env, enforce_eager=enforce_eager, per_request_metrics=False)


def start(config: plan.Server, timeout: float = 900) -> tuple[launch.LocalServer, float]:
    srv = launch.LocalServer(launch.prepare(config, engine.probe(), launch.free_port()))
    srv.start()
    try:
        seconds = srv.wait_healthy(timeout)
    except launch.LaunchError as exc:
        srv.stop()
        raise SystemExit(f"vLLM did not start: {exc}\n{exc.log_tail}")
    return srv, seconds
