"""The pure `prepare` step: the argv and environment that start one server configuration."""

from __future__ import annotations

from dataclasses import replace

from workbench.host import vllm_cli
from workbench.host.engine import VllmInstall
from workbench.launch.docker import docker_spec
from workbench.launch.serve_args import serve_args
from workbench.launch.spec import HOST, LaunchSpec
from workbench.launch.which_vllm import Servings, of
from workbench.plan import Server

# Server-side defaults for vLLM's CPU build on small machines (see the README): 1 GiB of KV cache
# instead of 4, and no core held back from the model.
# VLLM_TARGET_DEVICE: the CPU build finds its platform from a version tag that the shim supplies
# too; saying it outright keeps detection independent of how vLLM was installed.
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_TARGET_DEVICE": "cpu"}


def prepare(server: Server, vllm: VllmInstall, port: int, host_platform: str = "none",
            gpus: tuple[int, ...] | None = None, servings: Servings | None = None) -> LaunchSpec:
    """The argv and environment that start one server configuration (no side effects).
    `host_platform` is what the host's GPU tools report ('cuda', 'rocm' or 'none'); `gpus`, the
    GPU slot of a parallel sweep, replaces the profile's own GPU selection. `servings` are the
    probed vLLMs of the plan's servers (`which_vllm.probed`): the flags follow the vLLM that serves,
    which for a docker server is the image's, never the one installed here."""
    serving = of(server, vllm, host_platform, servings)
    if gpus is not None:
        server = replace(server, profile=replace(server.profile, gpus=tuple(gpus)))
    profile = server.profile
    if profile.kind == "attach":
        return LaunchSpec([], [], {}, 0, kind="attach", url=profile.base_url)
    if profile.kind == "docker":
        return docker_spec(server, serving, port, host_platform)
    platform = "cpu" if vllm.build == "cpu" else profile.gpu_platform(host_platform)
    args = serve_args(server, serving, port, HOST)
    env = {"PYTHONUNBUFFERED": "1", "VLLM_NO_USAGE_STATS": "1"}
    if vllm.build == "cpu":
        env.update(CPU_ENV)
    env.update(profile.server_env(platform))
    env.update(dict(server.env))
    # ROCm's runtime renumbers the GPUs ROCR_VISIBLE_DEVICES leaves visible before HIP sees them,
    # so one inherited from the shell would move HIP_VISIBLE_DEVICES onto other GPUs.
    unset = ("ROCR_VISIBLE_DEVICES",) if platform == "rocm" and profile.gpus else ()
    return LaunchSpec(vllm_cli.argv(vllm.python, args), args, env, port, unset=unset)


def shown_command(spec: LaunchSpec) -> str:
    """A spec prepared with port 0, as shown before it starts and stored with its runs: PORT
    stands for the free port chosen at start (docker publishes it as 127.0.0.1:PORT:PORT)."""
    return spec.command.replace("--port 0", "--port PORT").replace("127.0.0.1:0:0", "127.0.0.1:PORT:PORT")
