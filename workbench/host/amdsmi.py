"""What AMD's tools say about a GPU that decides ROCm performance: compute and memory partition,
VBIOS/IFWI, power cap, NUMA node (`amd-smi static`), the links between GPUs (`amd-smi topology`)
and VRAM where only the older `rocm-smi` is installed (`--showmeminfo vram`).

amd-smi prints the same tree two ways: `--json` (values as {"value", "unit"} objects since ROCm
6.1, or "x unit" strings before), and an indented "KEY: value" layout that older releases fall
back to and that AMD's documentation shows. Both are read into one dict per GPU with lowercase
keys, so every parser below works on either.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)")
_UNKNOWN = ("N/A", "NA", "", None, "[Not Supported]")


def _value(text: str) -> str | list[str]:
    """A leaf of the text layout: '[0 %, N/A]' -> ['0 %', 'N/A']; anything else stays a string."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [part.strip() for part in text[1:-1].split(",")]
    return text


def read_text(text: str) -> list[dict[str, Any]]:
    """The indented layout ("GPU: 0" blocks of "KEY: value" lines, four spaces a level) as one dict
    per GPU block, in order; "CPU: n" blocks (EPYC sockets on MI300A) are left out. A list too long
    for one line continues on deeper-indented lines."""
    gpus: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    pending: tuple[dict[str, Any], str] | None = None  # a list value still open across lines
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        if pending is not None:
            parent, key = pending
            parent[key] += " " + line
            if line.endswith("]"):
                parent[key] = _value(parent[key])
                pending = None
            continue
        if indent == 0:
            head, _, rest = line.partition(":")
            if head == "GPU":
                block = {"gpu": int(rest.strip()) if rest.strip().isdigit() else len(gpus)}
                gpus.append(block)
                stack = [(0, block)]
            else:
                stack = []  # a CPU block, or text that is not a device block
            continue
        if not stack:
            continue
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack:
            continue
        parent = stack[-1][1]
        key = key.strip().lower()
        rest = rest.strip()
        if rest:
            if rest.startswith("[") and not rest.endswith("]"):
                parent[key] = rest
                pending = (parent, key)
            else:
                parent[key] = _value(rest)
        else:
            child: dict[str, Any] = {}
            parent[key] = child
            stack.append((indent, child))
    return gpus


def read(text: str) -> list[dict[str, Any]]:
    """amd-smi output in either layout as one dict per GPU; [] when it is neither."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except ValueError:
            return []
        items = data.get("gpu_data", []) if isinstance(data, dict) else data
        return [d for d in items if isinstance(d, dict)]
    return read_text(text)


def number(value: Any) -> float | None:
    """71, '71 W', {'value': 71, 'unit': 'W'} -> 71.0; 'N/A' -> None."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value in _UNKNOWN:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _NUMBER.match(str(value))
    return float(m.group(1)) if m else None


def _known(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("value")
    return None if value in _UNKNOWN else str(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticFacts:
    """What `amd-smi static` says of one GPU; None where it says N/A or nothing."""
    gpu: int                          # amd-smi's index (physical)
    model: str | None                 # the ASIC's market name
    firmware: str | None              # VBIOS, or IFWI on MI350-class and newer releases
    compute_partition: str | None     # SPX, CPX, ...
    memory_partition: str | None      # NPS1, NPS4, ...
    power_cap_w: float | None
    numa_node: float | None
    driver: str | None


def static_facts(text: str) -> list[StaticFacts]:
    """Per GPU of `amd-smi static [--json]`, in the order it lists them."""
    out = []
    for d in read(text):
        asic, limit, part = (d.get(k) or {} for k in ("asic", "limit", "partition"))
        firmware = d.get("vbios") or d.get("ifwi") or {}
        numa = d.get("numa") or {}
        cap = number(limit.get("socket_power")) if isinstance(limit, dict) else None
        if cap is None and isinstance(limit, dict):
            cap = number(limit.get("max_power"))
        out.append(StaticFacts(
            gpu=int(number(d.get("gpu")) or 0),
            model=_known(asic.get("market_name")) if isinstance(asic, dict) else None,
            firmware=(_known(firmware.get("version")) or _known(firmware.get("part_number")))
            if isinstance(firmware, dict) else None,
            compute_partition=_known(part.get("compute_partition")) if isinstance(part, dict) else None,
            memory_partition=_known(part.get("memory_partition")) if isinstance(part, dict) else None,
            power_cap_w=cap,
            numa_node=number(numa.get("node")) if isinstance(numa, dict) else None,
            driver=_known((d.get("driver") or {}).get("version")) if isinstance(d.get("driver"), dict) else None,
        ))
    return out


def topology_links(text: str) -> dict[int, dict[int, str]]:
    """`amd-smi topology --json`: for each GPU, the link type to every other GPU (XGMI, PCIE)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    out: dict[int, dict[int, str]] = {}
    for d in data if isinstance(data, list) else data.get("gpu_data", []):
        if not isinstance(d, dict):
            continue
        links = {}
        for link in d.get("links", []):
            if isinstance(link, dict) and link.get("gpu") != d.get("gpu") and link.get("link_type") != "SELF":
                links[int(link["gpu"])] = str(link.get("link_type"))
        out[int(d.get("gpu", len(out)))] = links
    return out


def interconnect(links: dict[int, dict[int, str]]) -> str | None:
    """One word for a node: 'XGMI' when every pair is linked that way, else the kinds seen."""
    kinds = sorted({kind for peers in links.values() for kind in peers.values()})
    return "+".join(kinds) if kinds else None


_MEMINFO = re.compile(r"GPU\[(\d+)\]\s*:\s*VRAM Total (Used )?Memory \(B\):\s*(\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Vram:
    """One GPU's VRAM as rocm-smi reports it, in bytes (None: a line it did not print)."""
    gpu: int
    total_bytes: int | None = None
    used_bytes: int | None = None


def rocm_smi_vram(text: str) -> list[Vram]:
    """`rocm-smi --showmeminfo vram`: per GPU its VRAM total and used, by GPU index."""
    total: dict[int, int] = {}
    used: dict[int, int] = {}
    for gpu, is_used, value in _MEMINFO.findall(text):
        (used if is_used else total)[int(gpu)] = int(value)
    return [Vram(gpu=gpu, total_bytes=total.get(gpu), used_bytes=used.get(gpu))
            for gpu in sorted(total.keys() | used.keys())]
