"""What this host offers a vLLM server: a ROCm or CUDA stack (its tools, /dev/kfd), its GPUs, and a
docker engine. Standard library only, so `scripts/bootstrap.sh` can ask before anything is
installed: `python3 -m workbench.host.detect [--extra gpu]`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from workbench.host import gpus

KFD = Path("/dev/kfd")
# What to install instead of the `gpu` extra on a ROCm host: PyPI's `vllm` wheel is a CUDA build.
ROCM_ROUTE = ("the gpu extra installs PyPI's vllm, a CUDA build; on this ROCm host use AMD's image "
              "(docker pull vllm/vllm-openai-rocm, then a docker profile) or a vLLM built for ROCm "
              "(docs/amd-instinct.md)")


@dataclass(frozen=True)
class Host:
    accelerator: str                      # rocm | cuda | none
    gpus: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()           # vendor tools found on PATH
    kfd: bool = False                     # the ROCm kernel driver's device node
    docker: str | None = None             # the docker client, if any
    notes: tuple[str, ...] = field(default_factory=tuple)

    def lines(self) -> list[str]:
        """What was found, one fact a line, for bootstrap and `draftbench doctor`."""
        if self.accelerator == "none":
            found = "no ROCm or CUDA GPU (no amd-smi, rocm-smi, nvidia-smi or /dev/kfd)"
        else:
            names = ", ".join(self.gpus) or "names unknown"
            found = f"{'ROCm' if self.accelerator == 'rocm' else 'CUDA'} host: {len(self.gpus) or '?'} GPU(s) ({names})"
        tools = ", ".join(self.tools + (("/dev/kfd",) if self.kfd else ())) or "none"
        return [found, f"GPU tools: {tools}", f"docker: {self.docker or 'not found'}", *self.notes]


def scan(kfd: Path = KFD) -> Host:
    """The host as its tools describe it."""
    tools = tuple(t for t in ("amd-smi", "rocm-smi", "nvidia-smi") if shutil.which(t))
    accelerator, devices = gpus.detect(kfd)
    return Host(accelerator, tuple(d.name for d in devices), tools, kfd.exists(), shutil.which("docker"))


def refuse_extra(host: Host, extra: str) -> str | None:
    """The one line that stops installing `extra` on this host, or None when it may go ahead."""
    if extra == "gpu" and host.accelerator == "rocm":
        return ROCM_ROUTE
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.host.detect")
    parser.add_argument("--extra", help="the extra about to be installed (gpu is refused on ROCm hosts)")
    parser.add_argument("--accelerator", action="store_true", help="print only rocm, cuda or none")
    args = parser.parse_args(argv)
    host = scan()
    if args.accelerator:
        print(host.accelerator)
        return 0
    for line in host.lines():
        print(line)
    refusal = refuse_extra(host, args.extra) if args.extra else None
    if refusal:
        print(refusal, file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
