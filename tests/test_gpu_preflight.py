"""A GPU the host does not have is refused before anything launches, in one line: a profile asking
for cuda, or GPU 7, on a host without it would otherwise run on vLLM's CPU build and be stored as
made on that GPU. The host is whatever the vendor tools report; here they are stood in for."""

from __future__ import annotations

import sys

import pytest

from app.main import DEMO_PLAN, MainWindow, _read_plan_doc
from workbench.cli import main
from workbench.host import gpus
from workbench.usecases import findings

PLAN = """
[target]
model = "demo:smollm2-135m"
[profile]
{profile}
[[methods]]
method = "ngram"
n = [2]
[workload]
temperature = 0.0
"""
TWO_H200 = [gpus.Gpu("nvidia", 0, "NVIDIA H200"), gpus.Gpu("nvidia", 1, "NVIDIA H200")]


@pytest.fixture
def host(monkeypatch):
    """Sets what the vendor tools report: ('cuda' | 'rocm' | 'none', GPUs)."""
    def set_host(platform: str, found: list[gpus.Gpu]) -> None:
        monkeypatch.setattr(gpus, "detect", lambda *args, **kwargs: (platform, list(found)))
    set_host("none", [])
    return set_host


def test_spans_and_reasons():
    assert gpus.span([7]) == "GPU 7" and gpus.span([1, 0]) == "GPUs 0-1" and gpus.span([0, 2, 3]) == "GPUs 0, 2-3"
    assert gpus.missing("auto", (0, 1), "cuda", TWO_H200) is None
    assert gpus.missing("auto", (), "none", []) is None
    assert gpus.missing("cpu", (7,), "none", []) is None          # asked for the CPU: numbers select nothing
    assert gpus.missing("rocm", (3,), "rocm", []) is None         # amd-smi absent: the host cannot say
    assert gpus.missing("auto", (7,), "cuda", None) is None       # not listed: not judged
    assert gpus.missing("cuda", (), "rocm", []) == ("profile asks for cuda but this host has no NVIDIA GPU "
                                                    "(nvidia-smi found none; its GPUs are AMD)")


@pytest.mark.parametrize(("profile", "platform", "found", "line"), [
    ('platform = "cuda"', "none", [],
     "profile asks for cuda but this host has no NVIDIA GPU (nvidia-smi found none)"),
    ("gpus = [7]", "none", [],
     "profile asks for GPU 7 but this host has no GPU (neither nvidia-smi nor amd-smi found one)"),
    ('platform = "cuda"\ngpus = [7]', "none", [],
     "profile asks for GPU 7 but this host has no NVIDIA GPU (nvidia-smi found none)"),
    ("gpus = [1, 7]", "cuda", TWO_H200, "profile asks for GPU 7 but this host has GPUs 0-1 (nvidia-smi)"),
])
def test_a_dry_run_refuses_a_gpu_the_host_lacks_in_one_line(tmp_path, capsys, host, profile, platform, found, line):
    host(platform, found)
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(profile=profile))
    db = tmp_path / "r.sqlite"
    code = main(["run", str(path), "--db", str(db), "--dry-run", "--vllm-python", sys.executable])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.strip().splitlines() == [f"draftbench: {line}"], captured.err
    assert "Traceback" not in captured.err and not db.exists()


def test_a_gpu_the_host_has_is_not_refused(tmp_path, capsys, host):
    host("cuda", TWO_H200)
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(profile="gpus = [1]"))
    code = main(["run", str(path), "--db", str(tmp_path / "r.sqlite"), "--dry-run", "--vllm-python", sys.executable])
    err = capsys.readouterr().err
    assert "profile asks for" not in err and code == 0, err


def test_the_experiment_page_refuses_it_and_run_stays_off(qtbot, tmp_path, vllm_install, host):
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    page = w.experiment
    doc = _read_plan_doc(DEMO_PLAN)
    doc["profile"] = {"gpus": [7]}
    page.set_document(doc)
    assert page.current is not None, page.status.text()
    qtbot.waitUntil(lambda: "checking" not in page.status.text(), timeout=10000)
    errors = [str(f) for f in page.status.findings if f.level == findings.ERROR]
    assert errors[:1] == ["profile asks for GPU 7 but this host has no GPU (neither nvidia-smi nor amd-smi found one)"]
    assert not page.run_button.isEnabled()
