"""The main window opens at once, however slowly the vLLM environment and the GPU tools answer:
both are asked off the GUI thread and their answers fill the window in when they come."""

from __future__ import annotations

import os
import sys

import pytest

from app.jobs import worker
from app.main import MainWindow

SLOW_S = 10


def _stand_in(path, release, then: str) -> str:
    """A tool that answers only once the test creates `release` (or after 3 * SLOW_S): whatever the
    window did before that, it did without waiting for the answer. Ordered, not timed."""
    ticks = int(3 * SLOW_S / 0.05)
    path.write_text(f'#!/bin/sh\ni=0\nwhile [ ! -e "{release}" ] && [ $i -lt {ticks} ]; do sleep 0.05; i=$((i+1)); done\n'
                    f"{then}\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def no_call_left_running():
    yield
    # Whatever the test left in flight returns (the stand-ins sleep, then answer) before the next test.
    assert worker.wait(3 * SLOW_S * 1000)
    assert worker.active() == 0


def _open(qtbot, db, vllm=None) -> MainWindow:
    w = MainWindow(db, vllm)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_the_window_opens_before_a_slow_vllm_probe_and_gpu_detection_answer(
        qtbot, tmp_path, monkeypatch, vllm_install, no_call_left_running):
    monkeypatch.setenv("DRAFTBENCH_CONFIG_DIR", str(tmp_path / "config"))
    tools = tmp_path / "bin"
    tools.mkdir()
    gpus_answer, vllm_answers = tmp_path / "gpus-answer", tmp_path / "vllm-answers"
    _stand_in(tools / "nvidia-smi", gpus_answer, "echo 'GPU 0: Stand-in GPU (UUID: GPU-0)'")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DRAFTBENCH_VLLM_PYTHON", _stand_in(tmp_path / "slow-python", vllm_answers,
                                                          f'exec {sys.executable} "$@"'))
    try:
        # Shown while neither the probe nor GPU detection can have answered.
        w = _open(qtbot, tmp_path / "results.sqlite")
        assert w.probing and w.engine_label.text() == "checking vLLM…"
        assert not w.experiment.run_button.isEnabled()  # nothing starts against a vLLM not found yet
        assert w.experiment.host_platform == "none"

        # GPU detection answers first, the probe later; each fills its part in.
        gpus_answer.touch()
        qtbot.waitUntil(lambda: w.experiment.host_platform == "cuda", timeout=3 * SLOW_S * 1000)
        assert w.probing
        with qtbot.waitSignal(w.engine_probed, timeout=3 * SLOW_S * 1000) as probed:
            vllm_answers.touch()
    finally:
        gpus_answer.touch()
        vllm_answers.touch()
    assert probed.args[0].found and w.vllm.python.endswith("slow-python")
    assert w.engine_label.text() == f"vLLM {w.vllm.version} ({w.vllm.build})"
    assert w.experiment.vllm is w.vllm and w.experiment.run_button.isEnabled()
    assert "runs on" in w.experiment.status.text() and "vLLM not found" not in w.experiment.status.text()
