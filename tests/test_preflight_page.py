"""The Experiment page runs the same preflight as `draftbench run`: a draft whose vocabulary is not
the target's is an error on the page, Run stays disabled, and neither Run nor Ctrl+R starts a sweep."""

from __future__ import annotations

import json
import subprocess
import sys

import psutil
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from app.main import DEMO_PLAN, MainWindow, _read_plan_doc
from helpers.checkpoints import write_header_only_safetensors
from workbench.checkpoints import demo
from workbench.usecases import findings

OTHER_VOCAB = 32000  # the demo models have 49152


def other_vocab_draft(demo_models, tmp_path):
    """The noisy demo draft's config and a safetensors header whose embedding has another
    vocabulary size. Its config names no vocab_size, so only the header tells (the plan's own
    check reads config.json alone and lets it through; the preflight reads the header too)."""
    folder = tmp_path / "other-vocab-draft"
    folder.mkdir()
    config = json.loads((demo_models[demo.DRAFT_NOISY.name] / "config.json").read_text())
    del config["vocab_size"]
    (folder / "config.json").write_text(json.dumps(config))
    write_header_only_safetensors(folder / "model.safetensors", {
        "model.embed_tokens.weight": ("BF16", [OTHER_VOCAB, config["hidden_size"]])})
    return folder


def test_an_incompatible_draft_is_an_error_on_the_page_and_nothing_runs(qtbot, tmp_path, vllm_install,
                                                                          demo_models):
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    page = w.experiment
    doc = _read_plan_doc(DEMO_PLAN)
    doc["methods"] = [{"method": "draft_model", "draft": str(other_vocab_draft(demo_models, tmp_path)), "n": [2]}]
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    requested = []
    page.run_requested.connect(lambda *args: requested.append(args))

    page.set_document(doc)
    assert page.current is not None, page.status.text()  # a valid plan: the pair is what stops it
    page.request_run()  # before the check has answered: it is made there and then
    assert requested == [] and w.sweep is None

    qtbot.waitUntil(lambda: "checking" not in page.status.text(), timeout=10000)
    errors = [f for f in page.status.findings if f.level == findings.ERROR]
    assert [f.label for f in errors] == ["draft_model N=2 (other-vocab-draft)"]
    assert f"the draft's vocabulary has {OTHER_VOCAB} tokens and the target's 49152" in errors[0].message
    assert "✖ draft_model N=2 (other-vocab-draft): the draft&#x27;s vocabulary has 32000" in page.status.text()
    assert not page.run_button.isEnabled()

    qtbot.mouseClick(page.run_button, Qt.LeftButton)
    (run_action,) = [a for a in w.findChildren(type(w.menuBar().actions()[0]))
                     if a.shortcut() == QKeySequence("Ctrl+R")]
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=3000)
    page.name.setFocus()
    with qtbot.waitSignal(run_action.triggered, timeout=3000):  # the shortcut did reach the action
        qtbot.keyClick(page.name, Qt.Key_R, Qt.ControlModifier)
    qtbot.wait(200)
    assert requested == [] and w.sweep is None
    assert {p.pid for p in psutil.Process().children(recursive=True)} - children == set()

    # The CLI says the same, from the same plan.
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(page.text_for_run())
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "run", str(plan_file), "--dry-run",
                           "--db", str(tmp_path / "results.sqlite")], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"draftbench: {errors[0]}"
