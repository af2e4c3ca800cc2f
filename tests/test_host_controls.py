"""The launch profile shows only what can apply on the host the GPU tools found: on a CPU-only host
neither AMD's AITER switch nor the Ray cluster field shows (a line says why), on a ROCm host both
do; a value a plan sets, or choosing the rocm stack for another host, shows its control anyway."""

from __future__ import annotations

import pytest

from app.main import MainWindow
from workbench.host import gpus


def _window(qtbot, tmp_path, monkeypatch, vllm_install, platform: str):
    monkeypatch.setattr(gpus, "detect", lambda *a, **k: (platform, []))  # the host the GPU tools report
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    form = w.experiment.profile_form
    qtbot.waitUntil(lambda: form.host_platform == platform, timeout=10000)
    return w, form


@pytest.mark.parametrize("platform", ["none", "cuda"])
def test_no_rocm_switch_without_rocm(qtbot, tmp_path, monkeypatch, vllm_install, platform):
    w, form = _window(qtbot, tmp_path, monkeypatch, vllm_install, platform)
    assert form.kind.currentData() == "local"
    assert not form.aiter.isVisible() and form.host_note.isVisible()
    assert "AITER kernels (ROCm only" in form.host_note.text() and "\n" not in form.host_note.text()
    # A host without GPUs has no Ray cluster to run servers on; a CUDA host may.
    assert form.ray.isVisible() == (platform == "cuda")
    assert ("Ray cluster" in form.host_note.text()) == (platform == "none")
    assert form.gpus.isVisible() and form.python.isVisible()  # what applies everywhere stays
    # Aiming the profile at a ROCm host (the stack chosen) shows the switch.
    form.platform.setCurrentText("rocm")
    assert form.aiter.isVisible()
    form.platform.setCurrentText("auto")
    assert not form.aiter.isVisible()
    # A plan that sets it keeps it in sight, with its value.
    doc = w.experiment.document()
    doc["profile"] = {"kind": "local", "rocm_use_aiter": True}
    w.experiment.set_document(doc)
    assert form.aiter.isVisible() and form.table()["rocm_use_aiter"] is True


def test_rocm_host_shows_its_controls(qtbot, tmp_path, monkeypatch, vllm_install):
    _, form = _window(qtbot, tmp_path, monkeypatch, vllm_install, "rocm")
    assert form.aiter.isVisible() and form.ray.isVisible() and not form.host_note.isVisible()
    # An attached server has neither; the note says nothing about them.
    form.kind.setCurrentIndex(form.kind.findData("attach"))
    assert not form.aiter.isVisible() and not form.ray.isVisible() and not form.host_note.isVisible()
