"""Method x attention-backend combinations known to be slow or broken on ROCm
(resources/rocm/known_bad.toml, each row with its source and the vLLM versions it applies to),
checked before a sweep spends an hour on one."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from workbench import paths
from workbench.host import serving
from workbench.plan import Plan, Server

AUTO = "AUTO"  # no backend chosen in the profile: vLLM's default selection applies


@dataclass(frozen=True)
class Combination:
    methods: tuple[str, ...]
    attention_backends: tuple[str, ...]
    vllm_from: str
    vllm_fixed: str
    problem: str
    sources: tuple[str, ...]

    def applies(self, method: str, backend: str | None, vllm_version: str | None) -> bool:
        if method not in self.methods or (backend or AUTO) not in self.attention_backends:
            return False
        release = version_tuple(vllm_version)
        if release is None:
            return True  # unknown version (an image tagged latest): it may apply, so say it
        start, fixed = version_tuple(self.vllm_from), version_tuple(self.vllm_fixed)  # None when unset
        if start is not None and release < start:
            return False
        return not (fixed is not None and release >= fixed)

    def warning(self, backend: str | None, vllm_version: str | None) -> str:
        shown = backend or "the default attention backend"
        since = f"vLLM >= {self.vllm_from}" + (f", fixed in {self.vllm_fixed}" if self.vllm_fixed else "")
        version = vllm_version or "unknown"
        return (f"known problem on ROCm for {'/'.join(self.methods)} with {shown} ({since}; this run: "
                f"vLLM {version}): {self.problem} — {' '.join(self.sources)}")


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """'0.27.1', 'v0.27.1', '0.19.1+rocm721', '0.22.1rc1.dev499+g470229c' -> (0, 27, 1) etc."""
    return serving.version_tuple(version)


def table_path() -> Path:
    return paths.resources_dir() / "rocm" / "known_bad.toml"


def _combination(table: Mapping[str, Any]) -> Combination:
    """One [[combination]] table of the file; the versions are optional (empty: unknown, unfixed)."""
    return Combination(methods=tuple(table["methods"]), attention_backends=tuple(table["attention_backends"]),
                       vllm_from=table.get("vllm_from", ""), vllm_fixed=table.get("vllm_fixed", ""),
                       problem=table["problem"], sources=tuple(table["sources"]))


@lru_cache(maxsize=4)
def load(path: Path | None = None) -> tuple[Combination, ...]:
    doc = tomllib.loads((path or table_path()).read_text())
    return tuple(map(_combination, doc.get("combination", [])))


def image_version(image: str | None) -> str | None:
    """The vLLM release an image tag names ('vllm/vllm-openai-rocm:v0.27.1' -> '0.27.1')."""
    return serving.image_version(image)


def server_version(server: Server, installed: str | None) -> str | None:
    """The vLLM a server will run: the image's for a docker profile, else the installed one."""
    profile = server.profile
    if profile.kind == "docker":
        return image_version(profile.image)
    return None if profile.kind == "attach" else installed


def for_server(server: Server, host_platform: str, installed: str | None) -> list[str]:
    if server.profile.gpu_platform(host_platform) != "rocm":
        return []
    version = server_version(server, installed)
    backend = server.profile.attention_backend
    return [c.warning(backend, version) for c in load() if c.applies(server.method, backend, version)]


def for_runs(plan: Plan, host_platform: str, installed: str | None) -> dict[str, list[str]]:
    """The known-problem warnings of each run key (the same for every run of one server)."""
    out: dict[str, list[str]] = {}
    for server, runs in plan.servers():
        warnings = for_server(server, host_platform, installed)
        for r in runs:
            out[r.key] = warnings
    return out
