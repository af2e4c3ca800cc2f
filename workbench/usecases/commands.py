"""The exact command of every server a plan launches, with its runs: what `run --dry-run` prints
and the Experiment page shows."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from workbench import launch, methods, store
from workbench.host import gpus
from workbench.host.engine import VllmInstall
from workbench.plan import Plan


@dataclass(frozen=True)
class Launch:
    command: str        # as it will run and as its runs store it, PORT for the port chosen at start
    runs: list[str]     # the labels of the runs measured on that server


def preview(p: Plan, vllm: VllmInstall, host_platform: str | None = None,
            servings: launch.Servings | None = None) -> list[Launch]:
    """`host_platform` (cuda, rocm or none, as gpus.detect says) picks the GPU flags; detected when
    not given. `servings`, the vLLM each server runs as `launch.probed` asked it, picks the optional
    vLLM flags (without it, what is known without asking)."""
    if host_platform is None:
        host_platform = gpus.detect()[0]
    return [Launch(launch.shown_command(launch.prepare(server, vllm, 0, host_platform, servings=servings)),
                   [r.label for r in runs])
            for server, runs in p.servers()]


def preview_lines(launches: list[Launch]) -> list[str]:
    return [line for item in launches for line in [item.command, *(f"    {label}" for label in item.runs)]]


def serve_command(row: store.RunRecord, port: int = 8000) -> str:
    """The command that serves a measured configuration as it was measured: the one its run
    stored (what `preview` showed before it started), on a fixed port. A run imported without
    a command (`import-bench`) gets `vllm serve TARGET --speculative-config ...` built the same way,
    or, when the run lacks what that needs (its draft), a shell comment saying so."""
    stored = row.command
    if stored:
        return re.sub(r"--port \S+", f"--port {port}", stored)
    options = json.loads(row.options) if row.options else None
    try:
        config = methods.speculative_config(row.method or "", row.n, row.draft, options)
    except methods.MethodError as exc:
        # A stored run can lack what its method needs (a draft_model run imported without its
        # draft): the Compare page and the report show why no command is given instead of failing.
        return f"# no serve command for this run: {exc}"
    return shlex.join(["vllm", "serve", row.target or "?", "--port", str(port), *methods.speculative_args(config)])
