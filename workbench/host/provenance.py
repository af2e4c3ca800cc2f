"""Provenance: what a run's numbers depend on besides the plan, and what a reviewer of a ROCm result
asks first — the image and its digest, vLLM's version and commit, ROCm/HIP (or CUDA), the GPU and
its firmware, compute and memory partition, power cap, the AITER and other ROCm variables, the
attention backend vLLM chose, NUMA balancing. Collected once per server start and stored with its
runs (see docs/amd-instinct.md for what each field means).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from workbench.host import amdsmi, gpus

# (key, label) in the order History, `draftbench show`, the report and export-bench list them.
FIELDS = (
    ("kind", "launch"), ("image", "image"), ("image_digest", "image digest"),
    ("vllm_version", "vLLM version"), ("vllm_commit", "vLLM commit"), ("transformers_version", "transformers"),
    ("draft_sample_method", "draft sampling"),
    ("rocm_version", "ROCm"), ("hip_version", "HIP"), ("cuda_version", "CUDA"), ("driver", "driver"),
    ("gpu_model", "GPU"), ("firmware", "VBIOS/firmware"), ("compute_partition", "compute partition"),
    ("memory_partition", "memory partition"), ("power_cap_w", "power cap (W)"),
    ("interconnect", "GPU links"), ("numa_balancing", "NUMA balancing"),
    ("attention_backend", "attention backend"), ("rocm_env", "ROCm variables"),
)
LABELS = dict(FIELDS)
# Variables that change which kernels ROCm vLLM runs: AITER switches, the attention backend,
# HIP/HSA runtime knobs, PyTorch's tunable GEMMs.
ENV_PREFIXES = ("VLLM_ROCM_", "AITER_", "VLLM_ATTENTION_BACKEND", "HIP_", "HSA_", "ROCR_", "PYTORCH_TUNABLEOP_",
                "TORCH_BLAS_PREFER_HIPBLASLT", "VLLM_USE_TRITON_FLASH_ATTN")
# vLLM's own lines (vllm/platforms/rocm.py and the CUDA selector): "Using X backend ...", or
# "Overriding with X out of potential backends" when some backend was rejected.
_BACKEND = re.compile(r"(?:Using (?P<using>[A-Z][A-Z0-9_]+) (?:attention )?backend"
                      r"|Overriding with (?P<override>[A-Z][A-Z0-9_]+) out of potential backends)")
_COMMIT = re.compile(r"__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['\"]([0-9a-f]{7,40})['\"]")
_GIT_SUFFIX = re.compile(r"\+g([0-9a-f]{7,40})")


def attention_backend(lines: list[str]) -> str | None:
    """The attention backend vLLM chose, from its start-up log (the first choice it reports,
    which is the target's; a draft model's own choice follows it)."""
    text = " ".join(lines)  # a line wrapped by a terminal or a paste still matches
    m = _BACKEND.search(text)
    return (m.group("using") or m.group("override")) if m else None


def environment_knobs(env: dict[str, str]) -> dict[str, str]:
    """The ROCm-relevant variables of a server's environment (no secrets match these prefixes)."""
    return {k: str(v) for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES)}


def vllm_commit(package_dir: str | None, version: str | None) -> str | None:
    """The commit vLLM was built from: its generated _version.py, else a '+g<sha>' version suffix."""
    if package_dir:
        try:
            m = _COMMIT.search((Path(package_dir) / "_version.py").read_text())
            if m:
                return m.group(1)
        except OSError:
            pass
    m = _GIT_SUFFIX.search(version or "")
    return m.group(1) if m else None


def image_digest(docker: str, image: str) -> str | None:
    """The repository digest of a pulled image (`docker image inspect`), None when not pulled."""
    out = gpus.run_tool([docker, "image", "inspect", "--format", "{{json .RepoDigests}}", image])
    try:
        digests = json.loads(out or "null")
    except ValueError:
        return None
    return digests[0] if isinstance(digests, list) and digests else None


def _joined(values: Iterable[Any]) -> str | None:
    shown = list(dict.fromkeys(str(v) for v in values if v is not None))
    return ", ".join(shown) or None


def numa_balancing(path: Path = Path("/proc/sys/kernel/numa_balancing")) -> str | None:
    """'on' or 'off' (AMD's MI300 tuning guides ask for off), None where the kernel has no switch."""
    try:
        return "off" if path.read_text().strip() == "0" else "on"
    except OSError:
        return None


def rocm_host(selected: tuple[int, ...] = (), static_text: str | None = None, topology_text: str | None = None,
              meminfo_text: str | None = None) -> dict[str, Any]:
    """The GPU facts of a ROCm host from its tools (or the texts given), for the GPUs a profile
    selects (all when none is selected)."""
    if static_text is None:
        static_text = gpus.run_tool(["amd-smi", "static", "--json"]) or gpus.run_tool(["amd-smi", "static"]) or ""
    facts = [f for f in amdsmi.static_facts(static_text) if not selected or f.gpu in selected]
    out = {
        "gpu_model": _joined(f.model for f in facts),
        "firmware": _joined(f.firmware for f in facts),
        "compute_partition": _joined(f.compute_partition for f in facts),
        "memory_partition": _joined(f.memory_partition for f in facts),
        "power_cap_w": _joined(f"{f.power_cap_w:g}" for f in facts if f.power_cap_w is not None),
        "driver": _joined(f.driver for f in facts),
    }
    if topology_text is None:
        topology_text = gpus.run_tool(["amd-smi", "topology", "--json"]) or ""
    out["interconnect"] = amdsmi.interconnect(amdsmi.topology_links(topology_text))
    if not facts:
        # No amd-smi (ROCm before 6.0, or a minimal install): rocm-smi still says how much VRAM.
        if meminfo_text is None:
            meminfo_text = gpus.run_tool(["rocm-smi", "--showmeminfo", "vram"]) or ""
        vram = [v for v in amdsmi.rocm_smi_vram(meminfo_text) if not selected or v.gpu in selected]
        if vram:
            out["gpu_model"] = f"{len(vram)} AMD GPU(s), {(vram[0].total_bytes or 0) / 2**30:.0f} GiB VRAM each"
    return {k: v for k, v in out.items() if v is not None}


def host_versions(platform: str) -> dict[str, Any]:
    """ROCm and HIP, or CUDA, as the host reports them."""
    env = gpus.environment(platform)
    out = {"rocm_version": env.get("rocm"), "cuda_version": env.get("cuda"), "driver": env.get("driver")}
    if platform == "rocm":
        hip = gpus.run_tool(["hipconfig", "--version"])
        out["hip_version"] = hip.strip() if hip else None
    if env.get("gpu_models"):
        out["gpu_model"] = _joined(env["gpu_models"])
    return {k: v for k, v in out.items() if v}


def rows(prov: dict[str, Any] | None) -> list[tuple[str, str]]:
    """A run's provenance as (label, value) lines, in FIELDS order, the unknown ones left out."""
    out = []
    for key, label in FIELDS:
        value = (prov or {}).get(key)
        if value in (None, "", {}):
            continue
        if isinstance(value, dict):
            value = " ".join(f"{k}={v}" for k, v in value.items())
        out.append((label, str(value)))
    return out


def summary(prov: dict[str, Any] | None) -> str:
    """One short line for a table cell: image or vLLM, GPU, partitions, backend."""
    p = prov or {}
    parts = [p.get("image") or (f"vLLM {p['vllm_version']}" if p.get("vllm_version") else None),
             p.get("gpu_model"), "/".join(x for x in (p.get("compute_partition"), p.get("memory_partition")) if x),
             p.get("attention_backend")]
    return " · ".join(x for x in parts if x)


def differences(provenances: dict[int, dict[str, Any] | None]) -> list[tuple[str, dict[str, list[int]]]]:
    """The fields on which these runs' provenance differs: (label, {value: run ids}). Runs stored
    before provenance was recorded are left out rather than counted as differing."""
    known = {run: p for run, p in provenances.items() if p}
    out = []
    for key, label in FIELDS:
        values: dict[str, list[int]] = {}
        for run, p in sorted(known.items()):
            value = p.get(key)
            shown = json.dumps(value, sort_keys=True) if isinstance(value, dict) else ("–" if value is None else str(value))
            values.setdefault(shown, []).append(run)
        if len(values) > 1:
            out.append((label, values))
    return out
