"""What the desktop app asks of this host, each a named call: the vLLM that serves, the GPUs, the
CPU's measured demo timings, and the labels of a run's provenance. The app reaches the host only
through these (the import contract in pyproject.toml), and calls the slow ones on its worker."""

from __future__ import annotations

from typing import Any
from workbench.host import cpu, engine, gpus, provenance
from workbench.host.engine import VllmInstall
from workbench.host.gpus import Gpu

__all__ = ["Gpu", "VllmInstall", "cpu_measured", "default_python", "demo_cpu_choice", "demo_cpu_stored",
           "detect_gpus", "optional_modules", "probe_vllm", "provenance_rows", "provenance_summary"]


# Each call looks its module's function up when it runs, so a test that replaces that function
# (gpus.detect, say) replaces it for the app too.
def probe_vllm(python: str | None = None) -> VllmInstall:
    """The vLLM installation of `python` (default: the configured one), asked in a child process."""
    return engine.probe(python)


def default_python() -> str:
    """The interpreter whose vLLM the runs use until the probe answers."""
    return engine.default_python()


def optional_modules(install: VllmInstall) -> set[str]:
    """The optional packages some methods need that this vLLM environment has."""
    return engine.optional_modules(install)


def detect_gpus() -> tuple[str, list[Gpu]]:
    """The accelerator platform of this host and its GPUs."""
    return gpus.detect()


def cpu_measured() -> dict[str, dict[str, float]]:
    """The demo's server starts and runs measured on this CPU: the Live page's clock starts from them."""
    return cpu.measured()


def demo_cpu_stored() -> cpu.Choice | None:
    """The demo's dtype and threads, when already measured on this CPU with this torch (cheap)."""
    return cpu.stored()


def demo_cpu_choice(measure: bool = True) -> cpu.Choice:
    """The demo's dtype and threads: stored, else measured now (`measure`), else from the CPU's flags."""
    return cpu.demo_choice(measure=measure)


def provenance_rows(prov: dict[str, Any] | None) -> list[tuple[str, str]]:
    """A run's provenance as (label, text) rows."""
    return provenance.rows(prov)


def provenance_summary(prov: dict[str, Any] | None) -> str:
    """A run's provenance in one short line."""
    return provenance.summary(prov)
