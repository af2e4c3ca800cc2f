"""A started server's provenance: the host's GPU facts (asked once per sweep) joined with what
this server is — its image and digest, vLLM version and commit, the ROCm variables it was given,
and the attention backend its log says it chose."""

from __future__ import annotations

import os

from workbench.host import provenance
from workbench.host.engine import VllmInstall
from workbench.launch.spec import LaunchSpec
from workbench.plan import Server
from workbench.plan.profiles import CUDA_IMAGE, ROCM_IMAGE


def host_part(platform: str, selected: tuple[int, ...] = ()) -> dict:
    """The facts that are the same for every server of a sweep on this host."""
    out: dict = {"platform": platform, **provenance.host_versions(platform)}
    if platform == "rocm":
        out.update(provenance.rocm_host(selected))
    balancing = provenance.numa_balancing()
    if balancing:
        out["numa_balancing"] = balancing
    return out


def _container_env(argv: list[str]) -> dict[str, str]:
    """The NAME=value pairs a `docker run` passes with -e (secrets go by name only, so never here)."""
    out = {}
    for flag, value in zip(argv, argv[1:]):
        if flag == "-e" and "=" in value:
            name, _, v = value.partition("=")
            out[name] = v
    return out


def for_server(server: Server, spec: LaunchSpec, vllm: VllmInstall, host: dict, log_lines: list[str],
               served_version: str | None) -> dict:
    """Everything stored as one run's provenance."""
    profile = server.profile
    out = dict(host)
    out["kind"] = spec.kind
    if spec.kind == "docker":
        image = profile.image or (ROCM_IMAGE if profile.gpu_platform(host.get("platform", "none")) == "rocm"
                                  else CUDA_IMAGE)
        out["image"] = image
        out["image_digest"] = provenance.image_digest(profile.docker, image)
        env = _container_env(spec.argv)
        out["vllm_version"] = served_version
        out["vllm_commit"] = provenance.vllm_commit(None, served_version)
    else:
        # A local server inherits this process's environment: what the shell exported counts too.
        env = {**os.environ, **spec.env} if spec.kind == "local" else {}
        out["vllm_version"] = served_version or vllm.version
        out["vllm_commit"] = provenance.vllm_commit(vllm.package_dir if spec.kind == "local" else None,
                                                    out["vllm_version"])
    knobs = provenance.environment_knobs(env)
    if knobs:
        out["rocm_env"] = knobs
    out["attention_backend"] = provenance.attention_backend(log_lines) or profile.attention_backend
    return {k: v for k, v in out.items() if v not in (None, "", {})}

