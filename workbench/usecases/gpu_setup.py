"""The launch profile a GPU host should use: the ROCm or CUDA vLLM image through docker, or a vLLM
environment already built for the host's GPUs. `scripts/bootstrap.sh` and `draftbench doctor`
propose it; `python -m workbench.usecases.gpu_setup --save [--make-default]` stores it as the
saved profile "gpu" (and "default", which plans that name no profile then use). Where no GPU is
found nothing is proposed and vLLM's CPU build stays the default."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace

from workbench.host import detect, engine
from workbench.plan import profiles
from workbench.plan.profiles import CUDA_IMAGE, ROCM_IMAGE, Profile

GPU_PROFILE = "gpu"
DEFAULT_PROFILE = "default"


@dataclass(frozen=True)
class Proposal:
    profile: Profile | None
    line: str


def propose(host: detect.Host, vllm: engine.VllmInstall) -> Proposal:
    """What to serve the demo target (and every plan) with on this host."""
    if host.accelerator == "none":
        return Proposal(None, "no GPU found: vLLM's CPU build stays the default")
    platform = host.accelerator
    if host.docker:
        image = ROCM_IMAGE if platform == "rocm" else CUDA_IMAGE
        return Proposal(Profile(name=GPU_PROFILE, kind="docker", platform=platform, image=image, docker=host.docker),
                        f"serve on the GPU through docker with {image} (AMD's ROCm build of vLLM)"
                        if platform == "rocm" else f"serve on the GPU through docker with {image}")
    if vllm.found and vllm.build == platform:
        return Proposal(Profile(name=GPU_PROFILE, kind="local", platform=platform, python=vllm.python),
                        f"serve on the GPU with the {'ROCm' if platform == 'rocm' else 'CUDA'} "
                        f"vLLM {vllm.version} found in {vllm.python}")
    what = "AMD's vllm/vllm-openai-rocm image" if platform == "rocm" else "the vllm/vllm-openai image"
    return Proposal(None, f"{platform} GPUs found but neither docker nor a {platform} vLLM: install docker "
                          f"(then {what}) or set DRAFTBENCH_VLLM_PYTHON to an environment with a {platform} vLLM")


def save(profile: Profile, make_default: bool = False) -> list[str]:
    """Store the profile as "gpu" (and as "default"); the names saved."""
    profiles.save(replace(profile, name=GPU_PROFILE))
    if make_default:
        profiles.save(replace(profile, name=DEFAULT_PROFILE))
        return [GPU_PROFILE, DEFAULT_PROFILE]
    return [GPU_PROFILE]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.usecases.gpu_setup")
    parser.add_argument("--save", action="store_true", help="store the proposed profile as 'gpu'")
    parser.add_argument("--make-default", action="store_true", help="also as 'default', used by plans naming none")
    args = parser.parse_args(argv)
    host = detect.scan()
    for line in host.lines():
        print(f"found: {line}")
    proposal = propose(host, engine.probe())
    print(f"launch profile: {proposal.line}")
    if proposal.profile is None or not (args.save or args.make_default):
        if proposal.profile is not None:
            print("to use it: python -m workbench.usecases.gpu_setup --save [--make-default]")
        return 0
    try:
        names = save(proposal.profile, args.make_default)
    except profiles.ProfileError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"saved launch profile(s) {', '.join(names)} in {profiles.saved_path()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
