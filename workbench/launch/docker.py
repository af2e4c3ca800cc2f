"""A server run in the official vLLM image through `docker run`."""

from __future__ import annotations

import os
import secrets

from huggingface_hub import constants as hf_constants

from workbench.host.serving import ServingVllm
from workbench.launch.serve_args import serve_args
from workbench.launch.spec import HOST, LaunchSpec
from workbench.plan import Server
from workbench.launch.which_vllm import image_of
from workbench.plan.profiles import CUDA_DOCKER_FLAGS, ROCM_DOCKER_FLAGS, SECRET_ENV


def docker_spec(server: Server, vllm: ServingVllm, port: int, host_platform: str) -> LaunchSpec:
    """`docker run` of the official image. The container listens on all its interfaces, but the
    port is published on the host's loopback only; secrets pass by name (`-e NAME`). `vllm` is the
    image's own vLLM, whose flags the arguments follow."""
    profile = server.profile
    platform = profile.gpu_platform(host_platform)
    image = image_of(profile, host_platform)
    name = f"draftbench-{port}-{secrets.token_hex(3)}"
    argv = [profile.docker, "run", "--rm", "--name", name, "-p", f"{HOST}:{port}:{port}"]
    if platform == "rocm":
        argv += list(ROCM_DOCKER_FLAGS)
    elif platform == "cuda":
        argv += list(CUDA_DOCKER_FLAGS)
        # Inside the container the chosen GPUs are renumbered from 0, so no CUDA_VISIBLE_DEVICES.
        argv += ["--gpus", f'"device={",".join(map(str, profile.gpus))}"' if profile.gpus else "all"]
    cache = profile.hf_cache or hf_constants.HF_HUB_CACHE
    argv += ["-v", f"{cache}:/root/.cache/huggingface/hub"]
    for folder in dict.fromkeys(p for p in (server.target, server.draft) if p and os.path.isabs(p)):
        argv += ["-v", f"{folder}:{folder}:ro"]  # local checkpoints at the same path inside
    env = {"VLLM_NO_USAGE_STATS": "1"}
    env.update(profile.server_env(platform) if platform == "rocm" else dict(profile.env))
    env.update(dict(server.env))
    for k, v in sorted(env.items()):
        argv += ["-e", f"{k}={v}"]
    for k in SECRET_ENV:
        argv += ["-e", k]
    args = serve_args(server, vllm, port, "0.0.0.0")
    argv += ["--entrypoint", "vllm", image] + args
    return LaunchSpec(argv, args, {}, port, kind="docker",
                      stop_argv=(profile.docker, "stop", "--time", "20", name))
