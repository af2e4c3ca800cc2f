"""A started server's provenance: the host's GPU facts (asked once per sweep) joined with what
this server is — its image and digest, vLLM version and commit, the ROCm variables it was given,
and the attention backend its log says it chose."""

from __future__ import annotations

from typing import Any
import os

from workbench import methods
from workbench.host import provenance
from workbench.host.engine import VllmInstall
from workbench.host.serving import ServingVllm
from workbench.launch.spec import LaunchSpec
from workbench.launch.which_vllm import image_of
from workbench.plan import Server


def host_part(platform: str, selected: tuple[int, ...] = ()) -> dict[str, Any]:
    """The facts that are the same for every server of a sweep on this host."""
    out: dict[str, Any] = {"platform": platform, **provenance.host_versions(platform)}
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


def for_server(server: Server, spec: LaunchSpec, vllm: VllmInstall, host: dict[str, Any], log_lines: list[str],
               served_version: str | None, serving: ServingVllm | None = None) -> dict[str, Any]:
    """Everything stored as one run's provenance. `serving` is the vLLM that served (the image's
    for a docker server), as probed before the sweep: its transformers is known only from there."""
    profile = server.profile
    out = dict(host)
    out["kind"] = spec.kind
    if spec.kind == "docker":
        image = image_of(profile, host.get("platform", "none"))
        out["image"] = image
        out["image_digest"] = provenance.image_digest(profile.docker, image)
        env = _container_env(spec.argv)
        out["vllm_version"] = served_version or (serving.version if serving else None)
        out["vllm_commit"] = provenance.vllm_commit(None, served_version)
    else:
        # A local server inherits this process's environment: what the shell exported counts too.
        env = {**os.environ, **spec.env} if spec.kind == "local" else {}
        out["vllm_version"] = served_version or vllm.version
        out["vllm_commit"] = provenance.vllm_commit(vllm.package_dir if spec.kind == "local" else None,
                                                    out["vllm_version"])
    out["transformers_version"] = serving.transformers if serving else (vllm.transformers if spec.kind == "local"
                                                                         else None)
    out["draft_sample_method"] = methods.draft_sample_method(server.speculative_config())
    knobs = provenance.environment_knobs(env)
    if knobs:
        out["rocm_env"] = knobs
    out["attention_backend"] = provenance.attention_backend(log_lines) or profile.attention_backend
    return {k: v for k, v in out.items() if v not in (None, "", {})}

