"""How the host's GPUs are connected, read from `nvidia-smi topo -m` or `amd-smi topology`: a
cost per pair of GPUs (lower is closer), so a tensor-parallel server is given GPUs that talk over
NVLink / xGMI or one PCIe switch rather than across CPU sockets.

Only the ordering of costs matters, and only within one host: NVIDIA's link kinds are ranked as
its legend describes them (more bonded NVLinks first, then one PCIe bridge, several bridges, a
host bridge, bridges within a NUMA node, across NUMA nodes), and a pair on different NUMA nodes
costs a little more again; AMD's weight table is used as it is (15 per xGMI hop, more for PCIe).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.host.gpus import run_tool

# NVIDIA's link kinds, nearest first (nvidia-smi's legend). SOC is SYS in older drivers.
_PCIE_RANK = {"PIX": 2.0, "PXB": 3.0, "PHB": 4.0, "NODE": 5.0, "SYS": 6.0, "SOC": 6.0}
_NUMA_PENALTY = 0.5
_GPU = re.compile(r"^GPU(\d+)$")
_BDF = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d$")


@dataclass(frozen=True)
class Topology:
    gpus: tuple[int, ...]
    costs: dict[tuple[int, int], float] = field(default_factory=dict)

    def cost(self, a: int, b: int) -> float:
        """The cost of the link between two GPUs (0 for a pair the tool did not report)."""
        return self.costs.get((a, b), self.costs.get((b, a), 0.0))


def _nvidia_cost(link: str) -> float | None:
    link = link.strip()
    if link.startswith("NV") and link[2:].isdigit():
        return 1.0 - min(int(link[2:]), 99) / 100  # more bonded links, cheaper
    return _PCIE_RANK.get(link)


def parse_nvidia_topo(text: str) -> Topology:
    """`nvidia-smi topo -m`: a tab-separated matrix whose header names GPU0.. (then NICs and the
    affinity columns); each GPU row gives its link to every column, then its CPU and NUMA affinity."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = next((line.split("\t") for line in lines if line.split("\t")[1:2] and
                   _GPU.match(line.split("\t")[1].strip())), None)
    if header is None:
        return Topology(())
    columns = [c.strip() for c in header]
    gpu_cols = {i: int(m.group(1)) for i, c in enumerate(columns) if (m := _GPU.match(c))}
    numa_col = columns.index("NUMA Affinity") if "NUMA Affinity" in columns else None
    numa: dict[int, str] = {}
    links: dict[tuple[int, int], float] = {}
    gpus = []
    for line in lines:
        cells = line.split("\t")
        m = _GPU.match(cells[0].strip())
        if not m:
            continue
        me = int(m.group(1))
        gpus.append(me)
        if numa_col is not None and numa_col < len(cells):
            numa[me] = cells[numa_col].strip()
        for i, other in gpu_cols.items():
            if i < len(cells) and other != me:
                cost = _nvidia_cost(cells[i])
                if cost is not None:
                    links[(me, other)] = cost
    for (a, b), cost in list(links.items()):
        if numa.get(a) and numa.get(b) and numa[a] != numa[b]:
            links[(a, b)] = cost + _NUMA_PENALTY
    return Topology(tuple(gpus), links)


def parse_amd_topology(text: str) -> Topology:
    """`amd-smi topology`: tables headed by GPUs' PCI addresses; the WEIGHT TABLE is read. amd-smi
    numbers GPUs in the order it lists them, so the n-th address is GPU n."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().startswith("WEIGHT TABLE"))
    except StopIteration:
        return Topology(())
    header = lines[start + 1].split()
    if not header or not all(_BDF.match(h) for h in header):
        return Topology(())
    index = {bdf.lower(): i for i, bdf in enumerate(header)}
    links: dict[tuple[int, int], float] = {}
    for line in lines[start + 2:]:
        cells = line.split()
        if not cells or not _BDF.match(cells[0]):
            break
        me = index.get(cells[0].lower())
        for bdf, value in zip(header, cells[1:]):
            other = index[bdf.lower()]
            if me is not None and other != me and re.fullmatch(r"\d+(\.\d+)?", value):
                links[(me, other)] = float(value)
    return Topology(tuple(range(len(header))), links)


def probe(platform: str) -> Topology | None:
    """The host's topology from its vendor tool, or None where there is none to ask."""
    if platform == "cuda":
        out = run_tool(["nvidia-smi", "topo", "-m"])
        return parse_nvidia_topo(out) if out else None
    if platform == "rocm":
        out = run_tool(["amd-smi", "topology"])
        return parse_amd_topology(out) if out else None
    return None
