"""Which vLLM serves each server of a plan: the one installed here for a local server, the image's
for a docker one, nobody's Draftbench can ask for an attached one. `expected` answers without
running anything (the argv a preview shows); `probed` asks the image itself, once per image.
A sweep on a remote host (`run --remote`) runs `draftbench run` there, so its servers' vLLMs are
asked on that host, where they run, never here."""

from __future__ import annotations

from workbench.host import gpus, serving
from workbench.host.engine import VllmInstall
from workbench.host.serving import ServingVllm
from workbench.plan import Plan, Server
from workbench.plan.profiles import CUDA_IMAGE, ROCM_IMAGE, Profile

Servings = dict[str, ServingVllm]  # by server key


def image_of(profile: Profile, host_platform: str) -> str:
    """The image a docker profile runs: its own, else the official one for the host's GPUs."""
    return profile.image or (ROCM_IMAGE if profile.gpu_platform(host_platform) == "rocm" else CUDA_IMAGE)


def expected(server: Server, vllm: VllmInstall, host_platform: str) -> ServingVllm:
    """Without running anything: the local install, or an image taken from its tag."""
    profile = server.profile
    if profile.kind == "docker":
        return serving.from_tag(image_of(profile, host_platform), "not asked")
    if profile.kind == "attach":
        return ServingVllm(f"the server at {profile.base_url}", None)
    return serving.of_install(vllm)


def probed(plan: Plan, vllm: VllmInstall, host_platform: str | None = None) -> Servings:
    """Every server's vLLM, each docker image asked once (its answer cached by image id)."""
    if host_platform is None:
        host_platform = gpus.detect()[0]
    images: dict[tuple[str, str], ServingVllm] = {}
    out: Servings = {}
    for server, _ in plan.servers():
        profile = server.profile
        if profile.kind == "docker":
            key = (profile.docker, image_of(profile, host_platform))
            if key not in images:
                images[key] = serving.of_image(*key)
            out[server.key] = images[key]
        else:
            out[server.key] = expected(server, vllm, host_platform)
    return out


def of(server: Server, vllm: VllmInstall, host_platform: str, servings: Servings | None) -> ServingVllm:
    """The probed answer for this server where there is one, else the expected one."""
    found = (servings or {}).get(server.key)
    return found if found is not None else expected(server, vllm, host_platform)
