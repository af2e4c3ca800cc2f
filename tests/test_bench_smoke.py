"""Every benchmark under bench/ in its seconds-long --smoke mode (no GPU, no vLLM server: what needs
one is skipped with a line saying so), so a benchmark cannot rot between the runs of `make bench`.
The scripts are found by glob: a new one is covered without being listed here. The shell scripts
are checked for syntax."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers.recorded import ROOT

BENCH = ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if 'if __name__ == "__main__"' in p.read_text())
MODULES = sorted(p.name for p in BENCH.glob("*.py") if p.name not in SCRIPTS)
SHELL = sorted(p.name for p in BENCH.glob("*.sh"))


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    # Generous: the figures are not the point here, and a loaded machine makes the GUI ones slow.
    return subprocess.run(argv, capture_output=True, text=True, cwd=BENCH, env=env, timeout=300)


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_benchmark_runs_in_smoke_mode_and_prints_its_figures(script):
    done = _run([sys.executable, script, "--smoke"])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    figures = [line for line in done.stdout.splitlines() if line.strip() and not line.startswith("smoke: ")]
    assert figures, f"{script} --smoke printed no table or line:\n{done.stdout}"


@pytest.mark.parametrize("module", MODULES)
def test_the_shared_bench_module_imports(module):
    done = _run([sys.executable, "-c", f"import {module.removesuffix('.py')}"])
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("script", SHELL)
def test_the_shell_benchmark_parses(script):
    done = _run(["bash", "-n", script])
    assert done.returncode == 0, done.stderr


def test_every_script_takes_the_smoke_flag():
    """Found by glob, so none is missed: a script without --smoke would be run for real above."""
    assert SCRIPTS and SHELL
    assert [s for s in SCRIPTS if "--smoke" not in (BENCH / s).read_text()] == []
