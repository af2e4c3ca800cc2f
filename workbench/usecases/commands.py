"""The exact command of every server a plan launches, with its runs: what `run --dry-run` prints
and the Experiment page shows."""

from __future__ import annotations

from dataclasses import dataclass

from workbench import launch
from workbench.host import gpus
from workbench.host.engine import VllmInstall
from workbench.plan import Plan


@dataclass(frozen=True)
class Launch:
    command: str        # as it will run and as its runs store it, PORT for the port chosen at start
    runs: list[str]     # the labels of the runs measured on that server


def preview(p: Plan, vllm: VllmInstall, host_platform: str | None = None) -> list[Launch]:
    """`host_platform` (cuda, rocm or none, as gpus.detect says) picks the GPU flags; detected when not given."""
    if host_platform is None:
        host_platform = gpus.detect()[0]
    return [Launch(launch.shown_command(launch.prepare(server, vllm, 0, host_platform)), [r.label for r in runs])
            for server, runs in p.servers()]


def preview_lines(launches: list[Launch]) -> list[str]:
    return [line for item in launches for line in [item.command, *(f"    {label}" for label in item.runs)]]
