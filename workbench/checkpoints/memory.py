"""Will it fit? Weights (from safetensors headers) plus KV cache, against the visible GPUs' memory
or, for vLLM's CPU build, the machine's RAM; and what a running server really uses."""

from __future__ import annotations

import os
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Callable, Protocol, TypeVar

from workbench.checkpoints import compat
from workbench.checkpoints.compat import Checkpoint
from workbench.host import gpus
from workbench.host.engine import VllmInstall

GiB = 1024 ** 3
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
               "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "F4": 0.5}
SERVED_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}
GPU_UTILIZATION = 0.9  # vLLM's default --gpu-memory-utilization
# vLLM's CPU build reserves VLLM_CPU_KVCACHE_SPACE GiB of KV cache up front; 4 when unset is its
# historical default and what `--kv-cache-memory-bytes` replaces.
CPU_KV_DEFAULT_GIB = 4
# The CPU server is three Python processes (API server, engine core, worker) that each import
# torch and vLLM. Their memory apart from weights and KV cache, measured with bench/memory.py on
# vllm-cpu 0.32 (proportional set size, shared libraries counted once): 1.65 GiB serving the demo
# target alone, 1.83 GiB with a draft model beside it.
CPU_RUNTIME_BYTES = int(1.6 * GiB)
# On a GPU: CUDA/HIP context, activations and graphs, on top of weights and KV cache.
GPU_RUNTIME_BYTES = int(1.5 * GiB)


def weight_bytes(cp: Checkpoint, dtype: str = "auto") -> int:
    """The checkpoint's parameters at the dtype they will be served in."""
    served = SERVED_BYTES.get(dtype)
    total = 0.0
    for stored, shape in cp.tensors.values():
        count = 1
        for d in shape:
            count *= d
        total += count * (served or DTYPE_BYTES.get(stored, 2))
    return int(total)


def kv_bytes_per_token(cp: Checkpoint, dtype: str = "auto") -> int:
    t = cp.text()
    elem = SERVED_BYTES.get(dtype) or (4 if str(t.get("torch_dtype") or cp.config.get("torch_dtype")
                                              or cp.config.get("dtype")) == "float32" else 2)
    layers = t.get("num_hidden_layers") or 0
    if t.get("kv_lora_rank"):  # MLA keeps one compressed latent per layer instead of K and V
        return int(layers * (t["kv_lora_rank"] + t.get("qk_rope_head_dim", 0)) * elem)
    heads = t.get("num_attention_heads") or 1
    kv_heads = t.get("num_key_value_heads") or heads
    head_dim = t.get("head_dim") or (t.get("hidden_size", 0) // heads)
    return int(2 * layers * kv_heads * head_dim * elem)


@dataclass(frozen=True)
class Estimate:
    weights: int        # target + draft
    kv_needed: int      # max_model_len x concurrency tokens of KV cache
    kv_reserved: int    # what the server actually sets aside for KV cache
    runtime: int        # processes, context, activations
    budget: int         # what there is to fit into
    device: str

    @property
    def total(self) -> int:
        return self.weights + self.kv_reserved + self.runtime

    def warnings(self) -> list[str]:
        out = []
        if self.total > self.budget:
            out.append(f"needs about {gib(self.total)} (weights {gib(self.weights)}, KV cache {gib(self.kv_reserved)}, "
                       f"runtime {gib(self.runtime)}) but {self.device} offers {gib(self.budget)}: "
                       "expect an out-of-memory failure at start-up; lower max_model_len or concurrency, or use "
                       "a smaller model")
        if self.kv_reserved < self.kv_needed:
            out.append(f"the KV cache ({gib(self.kv_reserved)}) holds fewer tokens than max_model_len x concurrency "
                       f"needs ({gib(self.kv_needed)}): requests will queue or be preempted, which slows every method")
        return out


def gib(n: float) -> str:
    return f"{n / GiB:.2f} GiB"


def estimate(target: Checkpoint, draft: Checkpoint | None, max_model_len: int, concurrency: int,
             dtype: str = "auto", build: str = "cpu", env: dict[str, str] | None = None,
             tp: int = 1, gpu: int = 0, utilization: float | None = None) -> Estimate:
    weights = weight_bytes(target, dtype) + (weight_bytes(draft, dtype) if draft else 0)
    per_token = kv_bytes_per_token(target, dtype)
    # A Gemma 4 assistant reads the target's KV cache; every other drafter keeps its own.
    if draft is not None and not draft.config.get("model_type", "").startswith("gemma4"):
        per_token += kv_bytes_per_token(draft, dtype)
    kv_needed = per_token * max_model_len * concurrency
    if tp > 1 and build != "cpu":
        # Tensor parallelism shards weights and KV heads: each GPU holds about 1/tp of both.
        weights, kv_needed = weights // tp, kv_needed // tp
    if build == "cpu":
        space = (env or {}).get("VLLM_CPU_KVCACHE_SPACE", os.environ.get("VLLM_CPU_KVCACHE_SPACE"))
        kv_reserved = int(space) * GiB if space not in (None, "") else CPU_KV_DEFAULT_GIB * GiB
        return Estimate(weights, kv_needed, kv_reserved, CPU_RUNTIME_BYTES, available_ram(), "this machine's RAM")
    budget, device = gpu_budget(gpu, utilization or GPU_UTILIZATION)
    # On a GPU vLLM gives the KV cache whatever the utilization target leaves after weights.
    kv_reserved = max(kv_needed, budget - weights - GPU_RUNTIME_BYTES) if budget else kv_needed
    return Estimate(weights, kv_needed, kv_reserved, GPU_RUNTIME_BYTES, budget, device)


def available_ram() -> int:
    # Deferred: psutil is only needed when a plan is checked against this machine's memory
    import psutil

    return psutil.virtual_memory().available


def gpu_budget(gpu: int = 0, utilization: float = GPU_UTILIZATION) -> tuple[int, str]:
    """vLLM's share (--gpu-memory-utilization) of one GPU's memory (the first the profile selects)."""
    sizes = gpus.memory_totals()
    if not sizes:
        return 0, "no visible GPU"
    size = sizes[gpu] if gpu < len(sizes) else sizes[0]
    return int(size * utilization), f"GPU {gpu} ({gib(size)}, {utilization:.0%} of it for vLLM)"


def _utilization(extra_args: tuple[str, ...]) -> float | None:
    args = list(extra_args)
    for i, a in enumerate(args):
        try:
            if a == "--gpu-memory-utilization":
                return float(args[i + 1])
            if a.startswith("--gpu-memory-utilization="):
                return float(a.split("=", 1)[1])
        except (IndexError, ValueError):
            return None
    return None


# What the estimate reads of a plan beyond compat's PlanServer (the plan package sits above this one).
class PlanProfile(Protocol):
    """A server's launch profile: how it starts and on which GPUs."""

    @property
    def kind(self) -> str: ...

    @property
    def tensor_parallel_size(self) -> int: ...

    @property
    def gpus(self) -> tuple[int, ...]: ...


class ServerToFit(compat.PlanServer, Protocol):
    """A plan's server, with what its memory depends on."""

    @property
    def dtype(self) -> str: ...

    @property
    def extra_args(self) -> tuple[str, ...]: ...

    @property
    def profile(self) -> PlanProfile: ...


class PlanRun(Protocol):
    @property
    def concurrency(self) -> int: ...


# The plan's own server type is kept, so `env_of` gets the server its caller knows.
ServerT = TypeVar("ServerT", bound=ServerToFit)
ServerT_co = TypeVar("ServerT_co", bound=ServerToFit, covariant=True)


class PlanToFit(Protocol[ServerT_co]):
    """A plan: its servers, each with the runs it serves."""

    def servers(self) -> Sequence[tuple[ServerT_co, Sequence[PlanRun]]]: ...


def for_plan(p: PlanToFit[ServerT], vllm: VllmInstall,
             env_of: Callable[[ServerT], dict[str, str]]) -> list[tuple[str, str]]:
    """(server label, warning) for every server whose checkpoints are on disk. `env_of(server)`
    is the environment the server will really be started with (the launch layer builds it; the
    CPU build's KV-cache reservation is read from it)."""
    out = []
    for server, runs in p.servers():
        try:
            target = compat.load(server.target)
            draft = compat.load(server.draft) if server.draft else None
        except compat.CompatError:
            continue  # the compatibility check reports unreadable configs
        if target is None or (server.draft and draft is None):
            continue
        if server.profile.kind == "attach":
            continue  # already running: its memory is its own business
        concurrency = max(r.concurrency for r in runs)
        env = env_of(server)
        profile = server.profile
        est = estimate(target, draft, server.max_model_len, concurrency, server.dtype, vllm.build, env,
                       tp=profile.tensor_parallel_size, gpu=profile.gpus[0] if profile.gpus else 0,
                       utilization=_utilization(server.extra_args))
        label = server.method + (f" N={server.n}" if server.n else "")
        out += [(label, w) for w in est.warnings()]
    return out


# --- what a running server uses -------------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    pss: int   # proportional set size: shared pages split between the processes that map them
    rss: int   # resident set size summed over processes (counts shared libraries once per process)
    processes: int


def measure_tree(pid: int) -> Measured:
    # Deferred: psutil is only needed when a server is measured
    import psutil

    root = psutil.Process(pid)
    procs = [root] + root.children(recursive=True)
    pss = rss = 0
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        pss += getattr(info, "pss", info.rss)
        rss += info.rss
    return Measured(pss, rss, len(procs))
