"""Which GPU slots a sweep gets: from the plan's `[sweep] parallel`, the `--gpus` given, the host's
GPUs and their topology. Every refusal is one line, before anything starts.

The rule for vLLM's CPU build: there is no GPU to pin, so the indices `--gpus` names are logical
slots (any distinct numbers are accepted, nothing is set in the servers' environment) and
`parallel = "auto"` means one server per index named (one server when none is). Everywhere else
`--gpus` must name GPUs the host has, and a slot is `tensor_parallel_size` of them.
"""

from __future__ import annotations

from workbench.host import engine, gpus, topology
from workbench.host.slots import Slot, SlotError, allocate, describe, parse_gpu_list
from workbench.plan import Plan, parse_parallel

__all__ = ["Slot", "SlotError", "resolve", "parse_parallel"]


def resolve(plan: Plan, vllm: engine.VllmInstall, gpu_list: str | None = None, parallel: int | str | None = None,
            detected: tuple[str, list[int]] | None = None, topo: topology.Topology | None = None) -> list[Slot]:
    """The slots of the sweep. `parallel` (the command line's) overrides the plan's; when neither
    says, one server at a time, or as many as fit on the GPUs `gpu_list` names; `detected`
    (the host's platform and GPU indices) and `topo` are asked of the vendor tools when not given."""
    parallel = plan.parallel if parallel is None else parallel
    if parallel is None:
        parallel = "auto" if gpu_list is not None else 1
    profile = plan.runs[0].server.profile if plan.runs else None
    if profile is None or (parallel == 1 and gpu_list is None):
        return [Slot(0, None)]  # the serial sweep, GPUs as the profile selects them
    if profile.kind == "attach":
        raise SlotError("an attached server is one server: its runs go one at a time (no --gpus, parallel = 1)")
    tp = profile.tensor_parallel_size
    pool = parse_gpu_list(gpu_list) if gpu_list is not None else list(profile.gpus)
    logical = vllm.build == "cpu" or profile.platform == "cpu"
    if logical:
        if not pool:
            pool = list(range((parallel if isinstance(parallel, int) else 1) * tp))  # else "auto"
        return _cut(pool, tp, parallel, None, logical=True, what="logical slots")
    if detected is None:
        platform, found = gpus.detect()
        detected = (platform, [g.index for g in found])
    platform, present = detected
    if not present:
        raise SlotError("no GPU found on this host: a parallel sweep needs GPUs (or vLLM's CPU build, "
                        "where --gpus 0,1 declares logical slots)")
    missing = [g for g in pool if g not in present]
    if missing:
        raise SlotError(f"--gpus names GPU {missing[0]}, but this host has GPU(s) {describe(present)}")
    pool = pool or list(present)
    if topo is None:
        topo = topology.probe(platform)
    return _cut(pool, tp, parallel, topo, logical=False, what="GPUs")


def _cut(pool: list[int], tp: int, parallel: int | str, topo: topology.Topology | None, logical: bool,
         what: str) -> list[Slot]:
    if len(pool) % tp:
        raise SlotError(f"tensor_parallel_size {tp} does not divide the {len(pool)} {what} ({describe(pool)}): "
                        f"give a multiple of {tp}")
    room = len(pool) // tp
    count = parallel if isinstance(parallel, int) else room  # else "auto"
    if count > room:
        raise SlotError(f"parallel = {parallel} with tensor_parallel_size {tp} needs {parallel * tp} {what}; "
                        f"{len(pool)} are there ({describe(pool)})")
    return [Slot(i, group, logical) for i, group in enumerate(allocate(pool, tp, count, topo))]
