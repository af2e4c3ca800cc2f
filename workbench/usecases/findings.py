"""What to know before a plan runs: the plan's sanity warnings, draft/target compatibility and
memory, as one list of findings that the CLI prints and the Experiment page shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench import launch, store
from workbench.checkpoints import compat, loadable, memory
from workbench.host import detect, gpus
from workbench.host.engine import VllmInstall
from workbench.plan import Plan, knownbad, sanity

ERROR, WARNING = compat.ERROR, compat.WARNING
# vLLM's CPU build accepts a synthetic rejection sampler in the config, then its engine dies at the
# first request ("Synthetic acceptance not supported with CPU sampling"): minutes lost, so it is
# refused here. GPU builds (CUDA, ROCm) impose it.
WHAT_IF_ON_CPU = ("a what-if sweep needs a vLLM that can impose acceptance; the CPU build {version} cannot "
                  "(its engine stops at the first request: 'Synthetic acceptance not supported with CPU "
                  "sampling'): run it where a CUDA or ROCm build of vLLM serves")


@dataclass(frozen=True)
class Finding:
    level: str    # error (the plan must not run) or warning (it may)
    label: str    # which server it is about ("eagle3 N=3 (head)"), empty for the whole plan
    message: str

    def __str__(self) -> str:
        return f"{self.label}: {self.message}" if self.label else self.message


def preflight(p: Plan, vllm: VllmInstall, db: store.Database | None = None, host_platform: str | None = None,
              servings: launch.Servings | None = None, host_gpus: list[gpus.Gpu] | None = None) -> list[Finding]:
    """Every finding, in order: a GPU or GPU stack the profile asks for that this host lacks
    (`host_gpus` lists the host's, detected with the platform when neither is given), the plan's (against the runs already in `db`, if given), the known
    ROCm problems of its servers on this host (`host_platform`, detected when not given), what
    the vLLM that serves each server can load (`servings`, as `launch.probed` asked them; what is
    known without asking where not given), then each server's compatibility, then memory. Reads
    config.json and safetensors headers only. Memory is not estimated once a pair is
    incompatible: that pair will not start anyway."""
    if host_platform is None:
        host_platform, host_gpus = gpus.detect()
    platform = host_platform
    absent = _absent_gpus(p, platform, host_gpus)
    refused = what_if_refusal(p, vllm)
    if refused:
        return [*absent, Finding(ERROR, "", refused)]
    out = [*absent, *(Finding(WARNING, "", w) for w in sanity.for_plan(p, db))]
    shown: set[str] = set()  # one warning repeated for every N is said once
    local = [s for s, _ in p.servers() if s.profile.kind == "local" and s.profile.gpu_platform(platform) == "rocm"]
    if local and vllm.found and vllm.build == "cuda":
        # What `pip install draftbench[gpu]` leaves on a ROCm host: PyPI's vllm, a CUDA build.
        out.append(Finding(ERROR, "", f"vLLM {vllm.version} in {vllm.python} is a CUDA build; {detect.ROCM_ROUTE}"))
    for server, _ in p.servers():
        for warning in knownbad.for_server(server, platform, vllm.version):
            if warning not in shown:
                shown.add(warning)
                n = "" if server.n is None else f" N={server.n}"
                out.append(Finding(WARNING, f"{server.method}{n}", warning))
    for label, verdict in _serving(p, vllm, platform, servings):
        if verdict.level == ERROR or verdict.message not in shown:
            shown.add(verdict.message)
            out.append(Finding(verdict.level, label, verdict.message))
    for label, verdict in compat.for_plan(p):
        if verdict.level == ERROR:
            out.append(Finding(ERROR, label, verdict.message))
        elif verdict.level == WARNING and verdict.message not in shown:
            shown.add(verdict.message)
            out.append(Finding(WARNING, label, verdict.message))
    if any(f.level == ERROR for f in out):
        return out
    if vllm.build in ("cpu", "cuda", "rocm"):
        # The environment the server really starts with: the CPU build's KV-cache size is read from it.
        for label, warning in memory.for_plan(p, vllm, lambda server: launch.prepare(server, vllm, 0).env):
            if warning not in shown:
                shown.add(warning)
                out.append(Finding(WARNING, label, warning))
    return out


def what_if_refusal(p: Plan, vllm: VllmInstall) -> str | None:
    """Why `vllm` cannot run the what-if plan `p` (its CPU build serving a local server), or None.
    Also asked by the app's What-if dialog, so it never shows a plan as ready that Run refuses."""
    local_cpu = vllm.build == "cpu" and any(s.profile.kind == "local" for s, _ in p.servers())
    return WHAT_IF_ON_CPU.format(version=vllm.version) if p.mode == "what-if" and local_cpu else None


def _absent_gpus(p: Plan, platform: str, found: list[gpus.Gpu] | None) -> list[Finding]:
    """The GPUs (or GPU stack) a local server asks for and this host lacks: one error each, said
    once. Only local servers: one missing a GPU starts anyway (vLLM's CPU build ignores the
    selection) and is stored as made on it, while a container runs on its docker engine's host
    (DOCKER_HOST may be another machine) and fails there without the GPU, and an attached
    server's GPUs are not this host's to list."""
    out: list[Finding] = []
    for server, _ in p.servers():
        prof = server.profile
        if prof.kind != "local":
            continue
        why = gpus.missing(prof.platform, prof.gpus, platform, found)
        if why and all(f.message != why for f in out):
            out.append(Finding(ERROR, "", why))
    return out


def _serving(p: Plan, vllm: VllmInstall, platform: str,
             servings: launch.Servings | None) -> list[tuple[str, compat.Verdict]]:
    """How each server's vLLM is known where it could not be asked, and what it cannot load."""
    out: list[tuple[str, compat.Verdict]] = []
    checkpoints: dict[str, compat.Checkpoint | None] = {}

    def get(ref: str | None) -> compat.Checkpoint | None:
        if ref and ref not in checkpoints:
            try:
                checkpoints[ref] = compat.load(ref)
            except compat.CompatError:
                checkpoints[ref] = None  # compat.for_plan says why
        return checkpoints.get(ref) if ref else None

    for server, _ in p.servers():
        serving = launch.serving_of(server, vllm, platform, servings)
        label = server.method + ("" if server.n is None else f" N={server.n}")
        if serving.note:
            out.append(("", compat.Verdict(WARNING, "vLLM", serving.note)))
        out += [(label, v) for v in loadable.check(get(server.target), get(server.draft),
                                                    server.speculative_config(), serving, dict(server.env))]
    return out


def preflight_at(p: Plan, vllm: VllmInstall, db_path: Path | None, host_platform: str | None = None,
                 servings: launch.Servings | None = None, host_gpus: list[gpus.Gpu] | None = None) -> list[Finding]:
    """`preflight` against the runs stored in the results file at `db_path`. A file that cannot be
    opened (damaged, not a Draftbench database, unreadable) is itself the one error: a sweep would
    fail on it only after its first server started. Opening is enough here: the preflight runs on
    every edit of the plan, and the full page check (quick_check) is made where a file is chosen
    and where a sweep starts writing."""
    if db_path is None or not Path(db_path).exists():
        return preflight(p, vllm, None, host_platform, servings, host_gpus)
    try:
        db = store.open_db(db_path, readonly=True)
    except store.StoreError as exc:
        return [Finding(ERROR, "results database", str(exc))]
    try:
        return preflight(p, vllm, db, host_platform, servings, host_gpus)
    finally:
        store.close(db)


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.level == ERROR]
