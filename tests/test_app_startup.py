"""The main window opens at once, however slowly the vLLM environment and the GPU tools answer:
both are asked off the GUI thread and their answers fill the window in when they come."""

from __future__ import annotations

import os
import sys
import time

import pytest

from app.jobs import worker
from app.main import MainWindow

SLOW_S = 10


def _stand_in(path, sleep_s: float, then: str) -> str:
    path.write_text(f"#!/bin/sh\nsleep {sleep_s}\n{then}\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def no_call_left_running():
    yield
    # Whatever the test left in flight returns (the stand-ins sleep, then answer) before the next test.
    assert worker.wait(3 * SLOW_S * 1000)
    assert worker.active() == 0


def _open(qtbot, db, vllm=None) -> tuple[MainWindow, float]:
    t0 = time.monotonic()
    w = MainWindow(db, vllm)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w, time.monotonic() - t0


def test_the_window_opens_before_a_slow_vllm_probe_and_gpu_detection_answer(
        qtbot, tmp_path, monkeypatch, vllm_install, no_call_left_running):
    monkeypatch.setenv("DRAFTBENCH_CONFIG_DIR", str(tmp_path / "config"))
    tools = tmp_path / "bin"
    tools.mkdir()
    _stand_in(tools / "nvidia-smi", SLOW_S / 2, "echo 'GPU 0: Stand-in GPU (UUID: GPU-0)'")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    # What building the window costs on this machine with no probe to wait for (the install given).
    quick, baseline = _open(qtbot, tmp_path / "quick.sqlite", vllm_install)
    quick.close()

    monkeypatch.setenv("DRAFTBENCH_VLLM_PYTHON", _stand_in(tmp_path / "slow-python", SLOW_S,
                                                          f'exec {sys.executable} "$@"'))
    w, elapsed = _open(qtbot, tmp_path / "results.sqlite")
    # Shown within a second, or, on a machine so loaded that building the pages alone takes longer,
    # in about that time; never after the probe.
    assert elapsed < max(1.0, 2 * baseline) and elapsed < SLOW_S / 2, (elapsed, baseline)
    assert w.probing and w.engine_label.text() == "checking vLLM…"
    assert not w.experiment.run_button.isEnabled()  # nothing starts against a vLLM not found yet
    assert w.experiment.host_platform == "none"

    # GPU detection answers first, the probe later; each fills its part in.
    qtbot.waitUntil(lambda: w.experiment.host_platform == "cuda", timeout=3 * SLOW_S * 1000)
    assert w.probing
    with qtbot.waitSignal(w.engine_probed, timeout=3 * SLOW_S * 1000) as probed:
        pass
    assert probed.args[0].found and w.vllm.python.endswith("slow-python")
    assert w.engine_label.text() == f"vLLM {w.vllm.version} ({w.vllm.build})"
    assert w.experiment.vllm is w.vllm and w.experiment.run_button.isEnabled()
    assert "runs on" in w.experiment.status.text() and "vLLM not found" not in w.experiment.status.text()
