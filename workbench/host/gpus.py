"""Which accelerators this host exposes (ROCm, CUDA or none), asked of the vendor tools."""

from __future__ import annotations

from typing import Any
import json
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.host import amdsmi


@dataclass(frozen=True)
class Gpu:
    vendor: str
    index: int
    name: str


def run_tool(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_nvidia_smi_list(text: str) -> list[Gpu]:
    """`nvidia-smi -L`: 'GPU 0: NVIDIA H200 (UUID: ...)'."""
    gpus = []
    for line in text.splitlines():
        if line.startswith("GPU ") and ":" in line:
            head, rest = line.split(":", 1)
            gpus.append(Gpu("nvidia", int(head.split()[1]), rest.split("(UUID")[0].strip()))
    return gpus


def parse_amd_smi_list(text: str) -> list[Gpu]:
    """`amd-smi static --asic [--json]`: {gpu, asic: {market_name}} per GPU, in either layout."""
    return [Gpu("amd", int(amdsmi.number(d.get("gpu")) or i), (d.get("asic") or {}).get("market_name", "AMD GPU"))
            for i, d in enumerate(amdsmi.read(text))]


def detect(kfd: Path = Path("/dev/kfd")) -> tuple[str, list[Gpu]]:
    """('rocm' | 'cuda' | 'none', GPUs). `kfd` is the ROCm kernel driver's device node."""
    amd = run_tool(["amd-smi", "static", "--asic", "--json"])
    if amd:
        gpus = parse_amd_smi_list(amd)
        if gpus:
            return "rocm", gpus
    if kfd.exists() or shutil.which("rocm-smi"):
        return "rocm", []
    nvidia = run_tool(["nvidia-smi", "-L"])
    if nvidia:
        gpus = parse_nvidia_smi_list(nvidia)
        if gpus:
            return "cuda", gpus
    return "none", []


# What a profile's `platform` asks of the host, and the tool that lists such GPUs.
VENDORS = {"cuda": ("NVIDIA", "nvidia-smi"), "rocm": ("AMD", "amd-smi")}


def span(indices: Iterable[int]) -> str:
    """'GPU 7', 'GPUs 0-1', 'GPUs 0, 2-3': indices as a person writes them."""
    ordered = sorted(set(indices))
    runs: list[list[int]] = []
    for i in ordered:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return f"GPU{'s' if len(ordered) > 1 else ''} {text}"


def missing(platform: str, indices: Sequence[int], detected: str, found: list[Gpu] | None) -> str | None:
    """Why a server asking for `platform` ('auto', 'cuda', 'rocm' or 'cpu') on GPUs `indices`
    cannot have them on a host whose tools report `detected` and list `found` (None: not
    listed), or None when it can (or when the host cannot say). Without this the launch goes
    ahead: vLLM's CPU build ignores the GPU selection, and the run is stored as made on GPUs
    it never touched."""
    if platform == "cpu":
        return None  # asked for the CPU: GPU numbers select nothing there
    asked = span(indices) if indices else platform
    if platform in VENDORS and detected != platform:
        vendor, tool = VENDORS[platform]
        other = f"; its GPUs are {'AMD' if detected == 'rocm' else 'NVIDIA'}" if detected in VENDORS else ""
        return f"profile asks for {asked} but this host has no {vendor} GPU ({tool} found none{other})"
    if not indices or found is None:
        return None
    if detected == "none":
        return f"profile asks for {asked} but this host has no GPU (neither nvidia-smi nor amd-smi found one)"
    have = {g.index for g in found}
    if not have:
        return None  # a ROCm host without amd-smi: its GPUs are there but not listed
    absent = [i for i in indices if i not in have]
    if not absent:
        return None
    vendor, tool = VENDORS[detected]
    return f"profile asks for {span(absent)} but this host has {span(have)} ({tool})"


def parse_cuda_version(nvidia_smi_banner: str) -> str | None:
    """'| NVIDIA-SMI 580.95.05   Driver Version: 580.95.05   CUDA Version: 13.0 |'."""
    m = re.search(r"CUDA Version:\s*([\d.]+)", nvidia_smi_banner)
    return m.group(1) if m else None


def parse_amd_smi_version(text: str) -> dict[str, Any]:
    """`amd-smi version --json`: a list of one object with rocm_version, amdgpu_version ..."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    item = data[0] if isinstance(data, list) and data else data if isinstance(data, dict) else {}
    return {k: item.get(k) for k in ("rocm_version", "amdgpu_version", "amdsmi_library_version") if item.get(k)}


def environment(platform: str) -> dict[str, Any]:
    """What a run's numbers depend on besides vLLM: GPU models, driver and CUDA/ROCm versions."""
    env: dict[str, Any] = {"platform": platform}
    if platform == "cuda":
        out = run_tool(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if out:
            rows = [line.rsplit(",", 1) for line in out.strip().splitlines() if "," in line]
            env["gpu_models"] = [r[0].strip() for r in rows]
            env["driver"] = rows[0][1].strip() if rows else None
        banner = run_tool(["nvidia-smi"])
        env["cuda"] = parse_cuda_version(banner or "")
    elif platform == "rocm":
        env["gpu_models"] = [g.name for g in detect()[1]]
        info = Path("/opt/rocm/.info/version")
        if info.exists():
            env["rocm"] = info.read_text().strip()
        version = parse_amd_smi_version(run_tool(["amd-smi", "version", "--json"]) or "")
        env["rocm"] = env.get("rocm") or version.get("rocm_version")
        driver = Path("/sys/module/amdgpu/version")
        env["driver"] = driver.read_text().strip() if driver.exists() else version.get("amdgpu_version")
    return env


def parse_nvidia_smi_memory(text: str) -> list[int]:
    """`nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits`: MiB per line."""
    return [int(float(line.strip())) * 1024 * 1024 for line in text.splitlines() if line.strip()]


def parse_amd_smi_vram(text: str) -> list[int]:
    """`amd-smi static --vram --json`: a list of {gpu, vram: {size: {value, unit}}}."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    sizes = []
    for d in data if isinstance(data, list) else data.get("gpu_data", []):
        size = (d.get("vram") or {}).get("size") or {}
        value = size.get("value") if isinstance(size, dict) else size
        unit = size.get("unit", "MB") if isinstance(size, dict) else "MB"
        if isinstance(value, (int, float)):
            sizes.append(int(value * (1024 ** 3 if unit.upper().startswith("G") else 1024 ** 2)))
    return sizes


def memory_totals() -> list[int]:
    """Bytes of memory of each visible GPU (physical order), empty when none is visible."""
    amd = run_tool(["amd-smi", "static", "--vram", "--json"])
    if amd:
        sizes = parse_amd_smi_vram(amd)
        if sizes:
            return sizes
    nvidia = run_tool(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"])
    return parse_nvidia_smi_memory(nvidia) if nvidia else []
