"""GPU slots: the GPUs a sweep may use, cut into one group per server that runs at once.

Each server configuration needs `tensor_parallel_size` GPUs (its draft shares them); the slots
never overlap, so a measured window never shares a GPU with another server. A group is grown
from the first free GPU by adding, one at a time, the free GPU with the cheapest links to those
already in it (workbench.host.topology), ties going to the order the GPUs were listed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.errors import DraftbenchError
from workbench.host.topology import Topology


class SlotError(DraftbenchError, ValueError):
    """A one-line reason the GPUs asked for cannot be cut into slots."""


@dataclass(frozen=True)
class Slot:
    index: int
    gpus: tuple[int, ...] | None  # physical GPU indices (or logical ones); None: not pinned (serial)
    logical: bool = False          # vLLM's CPU build: numbered slots, no device behind them

    @property
    def label(self) -> str:
        if self.gpus is None:
            return "as the profile says"
        kind = "slot" if self.logical else "GPU"
        return f"{kind} {','.join(map(str, self.gpus))}"


def parse_gpu_list(text: str) -> list[int]:
    """`0-7`, `0,1,4-5`, `2`: distinct GPU indices in the order given."""
    out: list[int] = []
    for part in (p.strip() for p in str(text).split(",")):
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise SlotError(f"--gpus takes indices such as 0-7 or 0,1,4 — not {text!r}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise SlotError(f"--gpus: the range {part} runs backwards")
        for g in range(lo, hi + 1):
            if g in out:
                raise SlotError(f"--gpus names GPU {g} twice")
            out.append(g)
    return out


def allocate(pool: list[int], tp: int, count: int, topology: Topology | None = None) -> list[tuple[int, ...]]:
    """`count` disjoint groups of `tp` GPUs from `pool`, each as close together as the topology
    allows (the caller has checked that the pool holds them)."""
    free = list(pool)
    groups = []
    for _ in range(count):
        group = [free.pop(0)]
        while len(group) < tp:
            best = min(free, key=lambda g: (sum(topology.cost(g, m) for m in group) if topology else 0.0,
                                            free.index(g)))
            free.remove(best)
            group.append(best)
        groups.append(tuple(group))
    return groups


def describe(gpus: list[int]) -> str:
    return ", ".join(map(str, gpus)) if gpus else "none"
