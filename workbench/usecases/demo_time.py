"""How long a demo plan takes on this machine: its server starts and runs, at what they took here
before (workbench.host.cpu stores them after each local sweep), or a rough range until then.

Server starts take most of a demo on a CPU, and both they and the runs vary severalfold between
CPUs (a 2-core machine without bf16 instructions: 48 s a start and 653 s for the quick demo of
three servers in bf16; the plan was sized for about 30 s a start and 3 minutes), so a fixed figure
in the app was wrong by minutes on one of them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench import plan
from workbench.host import cpu

# The range said until this machine has measured its own (start s, run s): SLOW a 2-core machine
# without bf16 instructions serving the demo in float32 (starts of 32-48 s, the quick demo's runs
# 10-16 s; in emulated bf16 they took 55 s); FAST the ~30 s starts the quick plan was sized for,
# with runs of 8 s assumed. Rough by design, and said to be.
FAST = (30.0, 8.0)
SLOW = (50.0, 20.0)


@dataclass(frozen=True)
class Estimate:
    servers: int
    runs: int
    seconds: tuple[float, float]   # low, high (equal once measured here)
    measured: dict[str, float]     # 'start_s', 'run_s' measured on this machine; empty: rough

    def line(self) -> str:
        low, high = (round(s / 60) for s in self.seconds)
        size = f"{self.servers} server starts and {self.runs} runs"
        if self.measured:
            return (f"{size}: about {max(1, high)} min on this machine (measured here: "
                    f"{self.measured['start_s']:.0f} s a server start, {self.measured['run_s']:.0f} s a run)")
        return (f"{size}: roughly {max(1, low)}–{max(1, high)} min on {cpu.usable_cores()} CPU cores, a rough "
                "range until a demo has run on this machine (the button then says what it took here)")


def estimate(p: plan.Plan, known: dict[str, dict[str, float]] | None = None) -> Estimate:
    servers, runs = len({r.server for r in p.runs}), len(p.runs)
    known = cpu.measured() if known is None else known
    figures = known.get(p.runs[0].server.target, {}) if p.runs else {}
    if "start_s" in figures and "run_s" in figures:
        total = servers * figures["start_s"] + runs * figures["run_s"]
        return Estimate(servers, runs, (total, total), figures)
    low, high = (servers * start + runs * run for start, run in (FAST, SLOW))
    return Estimate(servers, runs, (low, high), {})


def tip(path: Path, what: str, known: dict[str, dict[str, float]] | None = None) -> str:
    """`what` the plan does, then how long it takes here; a plan that does not load says why."""
    try:
        p = plan.load(path)
    except plan.PlanError as exc:
        return f"{what} ({exc})"
    return f"{what}: {estimate(p, known).line()}"
