"""GPU, CPU and memory telemetry at about 1 Hz: NVIDIA through NVML (nvidia-ml-py, or nvidia-smi
when it is missing), AMD through `amd-smi metric --json`, the host through psutil.

Vendor tools number GPUs physically (PCI order); vLLM sees the GPUs a profile selects renumbered
from 0. Every reading carries both, so charts can say "GPU 0 (physical 2)".
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Protocol

import psutil

NVIDIA_QUERY = "index,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu"
AMD_METRIC_ARGV = ["amd-smi", "metric", "--usage", "--mem-usage", "--power", "--temperature", "--json"]


@dataclass
class Reading:
    t: float                   # Unix time of the reading
    device: str                # "gpu" or "host"
    physical: int | None       # the vendor tool's index
    index: int | None          # the index vLLM sees (None when the GPU is not selected)
    name: str | None = None
    util_pct: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    power_w: float | None = None
    temp_c: float | None = None

    def row(self, run_id: int | None) -> dict[str, Any]:
        return {"run_id": run_id, **asdict(self)}


def _num(text: Any) -> float | None:
    """'71.3', '71.3 W', 71, {'value': 71, 'unit': 'W'} -> 71.x; 'N/A', '[Not Supported]' -> None."""
    if isinstance(text, dict):
        text = text.get("value")
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    m = re.match(r"\s*(-?\d+(?:\.\d+)?)", str(text))
    return float(m.group(1)) if m else None


def _mib(value: Any) -> float | None:
    """A memory figure in MiB, reading the unit where the tool gives one (amd-smi says MB for MiB)."""
    number = _num(value)
    if number is None:
        return None
    unit = value.get("unit", "") if isinstance(value, dict) else (re.sub(r"[\d.\s-]", "", str(value)) or "")
    unit = unit.upper()
    if unit in ("B", "BYTES"):
        return number / 2**20
    if unit in ("KB", "KIB"):
        return number / 1024
    if unit in ("GB", "GIB"):
        return number * 1024
    return number


def parse_nvidia_smi_csv(text: str, t: float, visible: dict[int, int] | None = None) -> list[Reading]:
    """`nvidia-smi --query-gpu=NVIDIA_QUERY --format=csv,noheader,nounits`."""
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 7 or not parts[0].isdigit():
            continue
        phys = int(parts[0])
        if visible and phys not in visible:
            continue
        out.append(Reading(t, "gpu", phys, (visible or {}).get(phys, phys) if visible else phys, parts[1],
                           _num(parts[2]), _num(parts[3]), _num(parts[4]), _num(parts[5]), _num(parts[6])))
    return out


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if isinstance(d, dict) and d.get(k) not in (None, "N/A"):
            return d[k]
    return None


def parse_amd_smi_metric(text: str, t: float, visible: dict[int, int] | None = None) -> list[Reading]:
    """`amd-smi metric --json`, in the layouts ROCm releases have used: a list of per-GPU objects
    or {"gpu_data": [...]}, values as {"value": x, "unit": u}, "x unit" strings or numbers."""
    data = json.loads(text)
    items = data.get("gpu_data", []) if isinstance(data, dict) else data
    out = []
    for i, d in enumerate(items):
        if not isinstance(d, dict):
            continue
        gpu = _num(d.get("gpu")) if d.get("gpu") is not None else i
        if gpu is None:  # the sampler drops a reading it cannot parse
            raise ValueError(f"amd-smi named GPU {d.get('gpu')!r}, not a number")
        phys = int(gpu)
        if visible and phys not in visible:
            continue
        usage, power, temp, mem = (d.get(k) or {} for k in ("usage", "power", "temperature", "mem_usage"))
        util = _first(usage, "gfx_activity", "gfx_usage")
        if isinstance(util, list):  # per-XCP lists on partitioned MI300s
            util = _num(util[0])
        out.append(Reading(
            t, "gpu", phys, visible.get(phys) if visible else phys, None,
            _num(util),
            _mib(_first(mem, "used_vram", "used_visible_vram")),
            _mib(_first(mem, "total_vram", "total_visible_vram")),
            _num(_first(power, "socket_power", "current_socket_power", "average_socket_power")),
            _num(_first(temp, "hotspot", "edge", "junction")),
        ))
    return out


def host_reading(t: float) -> Reading:
    mem = psutil.virtual_memory()
    return Reading(t, "host", None, None, "CPU and RAM", psutil.cpu_percent(None),
                   (mem.total - mem.available) / 2**20, mem.total / 2**20)


# --- sources -----------------------------------------------------------------------------------

class NvmlSource:
    """NVML in-process: a reading costs microseconds, where nvidia-smi costs tens of milliseconds."""

    def __init__(self, visible: dict[int, int] | None):
        # Deferred: nvidia-ml-py is optional (sources_for falls back to nvidia-smi) and only CUDA hosts use it
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        wanted = sorted(visible) if visible else range(count)
        self.handles = [(i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in wanted if i < count]
        self.visible = visible

    def read(self, t: float) -> list[Reading]:
        n = self.nvml
        out = []
        for phys, h in self.handles:
            def safe(fn: Callable[..., Any], *a: Any) -> Any:
                try:
                    return fn(h, *a)
                except n.NVMLError:
                    return None
            util, mem = safe(n.nvmlDeviceGetUtilizationRates), safe(n.nvmlDeviceGetMemoryInfo)
            power = safe(n.nvmlDeviceGetPowerUsage)
            name = safe(n.nvmlDeviceGetName)
            out.append(Reading(
                t, "gpu", phys, self.visible.get(phys) if self.visible else phys,
                name.decode() if isinstance(name, bytes) else name,
                float(util.gpu) if util else None,
                mem.used / 2**20 if mem else None, mem.total / 2**20 if mem else None,
                power / 1000.0 if power is not None else None,
                safe(n.nvmlDeviceGetTemperature, n.NVML_TEMPERATURE_GPU)))
        return out


class CommandSource:
    """A vendor tool run once per tick, its output handed to a parser."""

    def __init__(self, argv: list[str], parse: Callable[[str, float, dict[int, int] | None], list[Reading]],
                 visible: dict[int, int] | None):
        self.argv, self.parse, self.visible = argv, parse, visible

    def read(self, t: float) -> list[Reading]:
        try:
            done = subprocess.run(self.argv, capture_output=True, text=True, timeout=10)
            return self.parse(done.stdout, t, self.visible) if done.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return []


class HostSource:
    def __init__(self) -> None:
        psutil.cpu_percent(None)  # the first call only starts the measurement interval

    def read(self, t: float) -> list[Reading]:
        return [host_reading(t)]


class Source(Protocol):
    """What the Sampler reads each tick: NVML, a vendor tool, or the host itself."""

    def read(self, t: float) -> list[Reading]: ...


# A stored reading as the Live page and the report read it back (the telemetry table's columns).
ReadingRow = tuple[float, str, int | None, int | None, float | None, float | None, float | None]


def sources_for(platform: str, gpus: Iterable[int] = (), host: bool = True) -> tuple[list[Source], str]:
    """The sources for a host whose GPU stack is `platform`, and a line saying what samples."""
    visible = {g: i for i, g in enumerate(gpus)} or None
    sources: list[Source] = [HostSource()] if host else []
    what = "CPU/RAM (psutil)" if host else ""
    if platform == "cuda":
        try:
            sources.append(NvmlSource(visible))
            what += ", NVIDIA GPUs (NVML)"
        except Exception:  # noqa: BLE001 - no library, no driver: fall back to the command line tool
            if shutil.which("nvidia-smi"):
                argv = ["nvidia-smi", f"--query-gpu={NVIDIA_QUERY}", "--format=csv,noheader,nounits"]
                sources.append(CommandSource(argv, parse_nvidia_smi_csv, visible))
                what += ", NVIDIA GPUs (nvidia-smi)"
    elif platform == "rocm" and shutil.which("amd-smi"):
        sources.append(CommandSource(AMD_METRIC_ARGV, parse_amd_smi_metric, visible))
        what += ", AMD GPUs (amd-smi)"
    return sources, what.strip(", ")


class Sampler:
    """Reads every source about once a second on its own thread; the runner drains the queue."""

    def __init__(self, sources: list[Source], interval_s: float = 1.0):
        self.sources = sources
        self.interval_s = interval_s
        self.queue: queue.Queue[Reading] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="telemetry")

    def start(self) -> "Sampler":
        if self.sources:
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            now = time.time()
            for source in self.sources:
                try:
                    for reading in source.read(now):
                        self.queue.put(reading)
                except Exception:  # noqa: BLE001 - a flaky tool must not stop the sweep
                    pass
            self._stop.wait(max(0.05, self.interval_s - (time.monotonic() - t0)))

    def drain(self) -> list[Reading]:
        out = []
        while True:
            try:
                out.append(self.queue.get_nowait())
            except queue.Empty:
                return out

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


@dataclass(frozen=True, slots=True)
class Energy:
    """What a run's GPU readings over its window add up to, each None where no GPU reported it
    (energy and mean power need two power readings of one GPU). The names are the runs table's."""
    energy_j: float | None = None
    power_mean_w: float | None = None
    gpu_util_mean: float | None = None
    gpu_mem_peak_mib: float | None = None

    def columns(self) -> dict[str, float]:
        """The run's columns these figures fill: those measured."""
        return {name: value for name, value in asdict(self).items() if value is not None}


def energy(readings: Iterable[Reading], t0: float, t1: float) -> Energy:
    """Energy and averages over [t0, t1] from GPU readings: trapezoids of power per GPU, summed
    over GPUs."""
    per_gpu: dict[int | None, list[tuple[float, float]]] = {}
    utils, mems = [], []
    for reading in readings:
        if reading.device != "gpu" or not t0 <= reading.t <= t1:
            continue
        if reading.power_w is not None:
            per_gpu.setdefault(reading.physical, []).append((reading.t, reading.power_w))
        if reading.util_pct is not None:
            utils.append(reading.util_pct)
        if reading.mem_used_mib is not None:
            mems.append(reading.mem_used_mib)
    joules = 0.0
    for points in per_gpu.values():
        points.sort()
        joules += sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(points, points[1:]))
    powered = any(len(p) > 1 for p in per_gpu.values())
    return Energy(energy_j=joules if powered else None,
                  power_mean_w=joules / (t1 - t0) if powered and t1 > t0 else None,
                  gpu_util_mean=sum(utils) / len(utils) if utils else None,
                  gpu_mem_peak_mib=max(mems) if mems else None)


def label(device: str, physical: int | None, index: int | None) -> str:
    if device != "gpu":
        return "host CPU"
    if index is None or index == physical:
        return f"GPU {physical}"
    return f"GPU {index} (physical {physical})"


@dataclass(frozen=True, slots=True)
class Series:
    """One device's readings over time, as drawn: utilisation %, power W and memory MiB at each
    time t (epoch seconds), NaN where the reading had none (a gap in the line)."""
    t: list[float] = field(default_factory=list)
    util: list[float] = field(default_factory=list)
    power: list[float] = field(default_factory=list)
    mem: list[float] = field(default_factory=list)


def _or_nan(value: float | None) -> float:
    return value if value is not None else float("nan")


def series(rows: list[ReadingRow]) -> dict[str, Series]:
    """Readings (t, device, physical, index, util_pct, power_w, mem_used_mib) as one series per
    device by its label, plus "all GPUs" whose power is the sum over GPUs at each tick (readings of
    one tick share their timestamp) — what a tensor-parallel run draws in all."""
    out: dict[str, Series] = {}
    ticks: dict[float, list[float]] = {}
    for t, device, physical, index, util, power, mem in rows:
        s = out.setdefault(label(device, physical, index), Series())
        s.t.append(t)
        s.util.append(_or_nan(util))
        s.power.append(_or_nan(power))
        s.mem.append(_or_nan(mem))
        if device == "gpu" and power is not None:
            ticks.setdefault(t, []).append(power)
    gpus = {r[2] for r in rows if r[1] == "gpu"}
    if len(gpus) > 1:
        whole = [(t, sum(p)) for t, p in sorted(ticks.items()) if len(p) == len(gpus)]
        out["all GPUs"] = Series(t=[t for t, _ in whole], util=[float("nan")] * len(whole),
                                 power=[p for _, p in whole], mem=[float("nan")] * len(whole))
    return out
