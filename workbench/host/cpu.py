"""This CPU as the demo sees it: its model, cores and flags, the dtype the demo target is served
in, and what its servers measured here.

bf16 is only fast where the CPU has bf16 instructions (avx512_bf16, amx_bf16); elsewhere torch
emulates it (a 2-core machine without them ran the quick demo's bf16 baseline at 23 tok/s, against
about 100 in the docs' screenshot). So the
dtype is measured once per CPU (a small matmul of the demo's size in each dtype, about a second)
and stored in the cache dir, keyed by the CPU's model, its flags and the torch version: a new
torch or another machine measures again. Until it is measured, the flags alone decide."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench import paths

CPUINFO = Path("/proc/cpuinfo")
# What decides how the CPU build runs the demo: avx2 is vLLM's CPU floor, avx512f its fast path,
# avx512_bf16 and amx_bf16 the instructions that make bf16 faster than float32 rather than slower.
RELEVANT = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
DTYPES = ("float32", "bfloat16")
STORE = "cpu-tuning.json"
# SmolLM2-135M's hidden and MLP sizes: the matmul timed is one the demo target does at every token.
HIDDEN, INTERMEDIATE = 576, 1536

Timer = Callable[[tuple[str, ...], int], dict[str, float]]  # (dtypes, threads) -> seconds per matmul


@dataclass(frozen=True)
class CpuInfo:
    model: str                      # 'unknown' where /proc/cpuinfo cannot be read (macOS, Windows)
    cores: int
    flags: frozenset[str] = field(default_factory=frozenset)
    known: bool = True              # False: the flags could not be read, so none is claimed

    def flag_line(self) -> str:
        if not self.known:
            return "unknown (no /proc/cpuinfo on this system)"
        return ", ".join(f"{f} {'yes' if f in self.flags else 'no'}" for f in RELEVANT)

    def key(self, torch_version: str) -> str:
        digest = hashlib.sha256(" ".join(sorted(self.flags)).encode()).hexdigest()[:16]
        return f"{self.model}|{digest}|torch {torch_version}"


@dataclass(frozen=True)
class Choice:
    dtype: str
    threads: int
    seconds: dict[str, float]       # dtype -> seconds per matmul; empty when not measured
    why: str

    def line(self) -> str:
        timed = ", ".join(f"{d} {s * 1e3:.2f} ms" for d, s in self.seconds.items())
        return f"{self.dtype} on {self.threads} threads ({self.why}{'; matmul ' + timed if timed else ''})"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def read(cpuinfo: Path = CPUINFO) -> CpuInfo:
    """This CPU; on a system without /proc/cpuinfo its model and flags are 'unknown'."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return CpuInfo(platform.processor() or "unknown", usable_cores(), frozenset(), known=False)
    model, flags = "unknown", frozenset[str]()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name == "model name" and model == "unknown":
            model = value.strip() or "unknown"
        elif name in ("flags", "Features") and not flags:  # x86, then ARM's name for them
            flags = frozenset(value.split())
    return CpuInfo(model, usable_cores(), flags, known=bool(flags))


def choose(info: CpuInfo, seconds: dict[str, float] | None, threads: int | None = None) -> Choice:
    """bf16 only where the CPU has bf16 instructions AND it measured faster here; float32 otherwise.
    `seconds` None: not measured yet, so the flags alone decide."""
    threads = threads or info.cores
    has_bf16 = bool(info.flags & set(BF16_FLAGS))
    if not has_bf16:
        why = "no avx512_bf16 or amx_bf16: bf16 would be emulated" if info.known else "CPU flags unknown"
        return Choice("float32", threads, dict(seconds or {}), why)
    if not seconds:
        return Choice("bfloat16", threads, {}, "bf16 instructions present; not measured yet")
    if seconds.get("bfloat16", float("inf")) < seconds.get("float32", float("inf")):
        return Choice("bfloat16", threads, dict(seconds), "bf16 instructions present and measured faster")
    return Choice("float32", threads, dict(seconds), "bf16 instructions present but measured slower")


def torch_version() -> str:
    try:
        return md.version("torch")
    except md.PackageNotFoundError:
        return "none"


def time_matmul(dtypes: tuple[str, ...], threads: int) -> dict[str, float]:
    """Seconds per (64 x HIDDEN) @ (HIDDEN x INTERMEDIATE) matmul in each dtype: the best of
    interleaved batches, so a burst of load elsewhere on the machine hits every dtype alike."""
    # Deferred: torch takes seconds to import and only this measurement needs it.
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        x32, w32 = torch.randn(64, HIDDEN, generator=gen), torch.randn(HIDDEN, INTERMEDIATE, generator=gen)
        pairs = {d: (x32.to(getattr(torch, d)), w32.to(getattr(torch, d))) for d in dtypes}
        best = {d: float("inf") for d in dtypes}
        for batch in range(8):
            for d, (x, w) in pairs.items():
                t0 = time.perf_counter()
                for _ in range(20):
                    torch.matmul(x, w)
                if batch:  # the first batch warms the thread pool and picks kernels
                    best[d] = min(best[d], (time.perf_counter() - t0) / 20)
        return best
    finally:
        torch.set_num_threads(before)


def _load(store: Path) -> dict[str, Any]:
    try:
        doc = json.loads(store.read_text())
    except (OSError, ValueError):
        return {}  # none yet, or damaged: measured again and rewritten
    return doc if isinstance(doc, dict) else {}


def _save(store: Path, doc: dict[str, Any]) -> None:
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        paths.write_atomic(store, json.dumps(doc, indent=2, sort_keys=True))
    except OSError:
        pass  # a read-only cache only means measuring again next time


def store_path() -> Path:
    return paths.cache_dir() / STORE


def stored(info: CpuInfo | None = None, store: Path | None = None) -> Choice | None:
    """The choice measured on this CPU with this torch, if any (no torch import: cheap)."""
    info = info or read()
    entry = _load(store or store_path()).get("dtype", {}).get(info.key(torch_version()))
    if not isinstance(entry, dict) or not isinstance(entry.get("seconds"), dict):
        return None
    return choose(info, {str(k): float(v) for k, v in entry["seconds"].items()}, int(entry.get("threads") or 0))


def demo_choice(measure: bool = True, info: CpuInfo | None = None, store: Path | None = None,
                timer: Timer | None = None) -> Choice:
    """The demo's dtype and threads: stored, else measured now and stored (`measure`, and torch is
    installed), else from the flags alone."""
    info = info or read()
    store = store or store_path()
    found = stored(info, store)
    if found is not None or not measure:
        return found or choose(info, None)
    threads = info.cores
    if not info.flags & set(BF16_FLAGS):
        seconds: dict[str, float] = {}  # float32 whatever bf16 measures: no need to time it
    else:
        try:
            seconds = (timer or time_matmul)(DTYPES, threads)
        except ImportError:
            return choose(info, None)  # no torch here: the flags decide, and nothing is stored
    doc = _load(store)
    doc.setdefault("dtype", {})[info.key(torch_version())] = {
        "seconds": seconds, "threads": threads, "model": info.model}
    _save(store, doc)
    return choose(info, seconds, threads)


def demo_dtype() -> str:
    """What a demo plan that names no dtype is served in: never measures (plans load on the GUI
    thread); the app and `draftbench demo-model` measure once, off it."""
    return demo_choice(measure=False).dtype


# --- what the demo's servers and runs took on this CPU: the ETA and the Quick demo's tooltip ----
KEEP = 5  # the latest figures kept per target: a changed machine or vLLM is followed soon


def record(target: str, start_s: float | None = None, run_s: float | None = None,
           info: CpuInfo | None = None, store: Path | None = None) -> None:
    """Stores a measured server start (or run) of `target` (its model folder) on this CPU."""
    store = store or store_path()
    doc = _load(store)
    entry = doc.setdefault("servers", {}).setdefault((info or read()).model, {}).setdefault(target, {})
    for name, value in (("start_s", start_s), ("run_s", run_s)):
        if value is not None and value > 0:
            entry[name] = ([*entry.get(name, []), round(float(value), 2)])[-KEEP:]
    _save(store, doc)


def measured(info: CpuInfo | None = None, store: Path | None = None) -> dict[str, dict[str, float]]:
    """target folder -> {'start_s': mean, 'run_s': mean} of what was measured on this CPU."""
    entries = _load(store or store_path()).get("servers", {}).get((info or read()).model, {})
    out: dict[str, dict[str, float]] = {}
    for target, entry in entries.items() if isinstance(entries, dict) else ():
        figures = {k: statistics.fmean(v) for k, v in entry.items()
                   if k in ("start_s", "run_s") and isinstance(v, list) and v}
        if figures:
            out[target] = figures
    return out
