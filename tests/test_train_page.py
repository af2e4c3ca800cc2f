"""The Train page driven offscreen: a tiny real training run (the target's responses from a real vLLM
CPU server, speculators' prepare-data and training, the real target's hidden states) cancelled
during the training step before and after its first checkpoint, resumed from the page each time,
then evaluated in one click."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
from PySide6.QtCore import Qt

from workbench import events, plan
from workbench.plan import catalog
from workbench.train.speculators_cpu import HOLD_VAR

KEY_VAR = "DRAFTBENCH_TEST_TRAIN_KEY"


def _fill(page, out: Path, endpoint: str | None = None) -> None:
    form = page.form
    form.target.setCurrentText("demo:smollm2-135m")
    form.method.setCurrentIndex(form.method.findData("eagle3"))
    form.prompts.setCurrentText("builtin")
    form.num_prompts.setValue(4)
    form.max_tokens.setValue(24)
    form.seq_length.setValue(256)
    form.epochs.setValue(2)
    form.vocab.setValue(256)
    form.name.setText("gui-trained-eagle3")
    form.out.setText(str(out))
    form.out.setModified(True)
    if endpoint:
        form.endpoint.setText(endpoint)
        form.key_env.setText(KEY_VAR)


def _children_in(folder: Path) -> list[psutil.Process]:
    """Processes still working in the run's folder (the training subprocess runs there)."""
    found = []
    for p in psutil.process_iter(["cwd"]):
        try:
            if p.info["cwd"] and Path(p.info["cwd"]) == folder:
                found.append(p)
        except (psutil.Error, OSError):
            continue
    return found


def _epoch_checkpoints(out: Path) -> list[str]:
    """The epoch checkpoints a resumed training starts from (speculators skips `interrupted`)."""
    return sorted(p.name for p in (out / "checkpoints").glob("*") if p.name.isdigit())


def _cancel_when(qtbot, page, ready) -> list:
    """Start (or Resume), cancel once `ready()` holds, and return the page's outcome. The trainer
    holds at the point the test chose (HOLD_VAR), so the cancel lands there, not in a race."""
    with qtbot.waitSignal(page.finished, timeout=600_000) as ended:
        qtbot.mouseClick(page.start_button, Qt.LeftButton)
        assert page.running and page.cancel_button.isEnabled() and not page.start_button.isEnabled()
        qtbot.waitUntil(ready, timeout=600_000)
        assert page.steps.items["train"].text(1) == "running"
        qtbot.mouseClick(page.cancel_button, Qt.LeftButton)
    return ended.args


def test_train_page_cancel_before_and_after_a_checkpoint_resume_and_evaluate(qtbot, tmp_path, draft_server,
                                                                            monkeypatch):
    """One training run cancelled twice from the page: in epoch 1 before any checkpoint exists
    (the resume trains from scratch), then in epoch 2 after epoch 1's checkpoint is written (the
    resume loads that checkpoint and trains epoch 2 only), then finished and evaluated."""
    from app.main import MainWindow

    monkeypatch.setenv("DRAFTBENCH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv(KEY_VAR, draft_server.api_key or "unused")
    warnings: list[str] = []
    monkeypatch.setattr("app.pages.train_page.QMessageBox.warning", lambda *a: warnings.append(a[2]))
    window = MainWindow(tmp_path / "results.sqlite")
    qtbot.addWidget(window)
    page = window.train
    out = tmp_path / "run"
    _fill(page, out, draft_server.spec.base_url)
    assert page.start_button.text() == "Start" and not page.evaluate_button.isEnabled()

    def detail() -> str:
        return page.steps.items["train"].text(2)

    # Cancel before any checkpoint: the trainer holds after reporting its first step of epoch 1.
    monkeypatch.setenv(HOLD_VAR, "0")
    outcome = _cancel_when(qtbot, page, lambda: detail().startswith("epoch 1 of 2, step"))
    assert outcome == ["cancelled"], (outcome, page.status.text(), warnings)
    assert not warnings
    done = json.loads((out / "manifest.json").read_text())["done"]
    assert set(done) == {"prompts", "responses", "prepare", "hidden_states"}
    assert done["responses"]["responses"] == 4
    assert page.steps.items["hidden_states"].text(1) == "done"
    assert page.steps.items["train"].text(1) == "cancelled"
    assert page.start_button.text() == "Resume" and "resume" in page.status.text().lower()
    assert not _children_in(out), "the training subprocess outlived the cancel"
    assert _epoch_checkpoints(out) == []

    # Resume, cancel after epoch 1's checkpoint: the trainer holds after its first step of epoch 2,
    # which speculators runs only once that checkpoint is saved.
    monkeypatch.setenv(HOLD_VAR, "1")
    ckpt = out / "checkpoints" / "0"
    outcome = _cancel_when(qtbot, page, lambda: (ckpt / "model.safetensors").exists()
                           and detail().startswith("epoch 2 of 2, step"))
    assert outcome == ["cancelled"], (outcome, page.status.text(), warnings)
    assert not warnings
    assert "train" not in json.loads((out / "manifest.json").read_text())["done"]
    assert page.steps.items["train"].text(1) == "cancelled" and page.start_button.text() == "Resume"
    assert not _children_in(out), "the training subprocess outlived the cancel"
    assert _epoch_checkpoints(out) == ["0"]
    assert all((ckpt / f).exists() for f in ("model.safetensors", "optimizer_state_dict.pt"))

    # Resume from the page: the finished steps are skipped, training continues from epoch 1's
    # checkpoint (on CPU too) and runs epoch 2 only.
    monkeypatch.delenv(HOLD_VAR)
    with qtbot.waitSignal(page.finished, timeout=600_000) as ended:
        qtbot.mouseClick(page.start_button, Qt.LeftButton)
    assert ended.args == ["done"], (page.status.text(), warnings)
    last = max(out.glob("events-*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    assert {e["epoch"] for e in events.read_objects(last) if e.get("event") == "train_step"} == {1}
    for step in ("prompts", "responses", "prepare", "hidden_states"):
        assert page.steps.items[step].text(1) == "done earlier"
    assert all(page.steps.items[s].text(1) == "done" for s in ("train", "checkpoint", "register"))
    assert len(page.charts.train_curve.xData) >= 2 and len(page.charts.val_curve.xData) >= 1
    assert any(type(i).__name__ == "BarGraphItem" for i in page.charts.acc_plot.getPlotItem().items)
    assert page.evaluate_button.isEnabled()
    pair = catalog.get("gui-trained-eagle3")
    assert pair.method == "eagle3" and Path(pair.draft).is_dir()

    (tmp_path / "charts").mkdir()
    written = page.export_to(tmp_path / "charts" / "training.png")
    assert [p.name for p in written] == ["training.png", "training-accuracy.png"]
    assert all(p.stat().st_size > 5000 for p in written)

    # One click: the evaluation plan (baseline vs the draft over N) is loaded and run.
    window.experiment.run_requested.disconnect(window.start_sweep)  # the sweep itself is tested elsewhere
    with qtbot.waitSignal(window.experiment.run_requested, timeout=10_000) as requested:
        qtbot.mouseClick(page.evaluate_button, Qt.LeftButton)
    p = requested.args[0]
    assert {r.server.method for r in p.runs} == {"baseline", "eagle3"}
    assert {r.server.draft for r in p.runs if r.server.method == "eagle3"} == {pair.draft}
    assert window.tabs.currentWidget() is window.experiment

    # Reopening the folder in a fresh page shows the finished run and its loss curve.
    from app.pages.train_page import TrainPage

    again = TrainPage()
    qtbot.addWidget(again)
    again.form.out.setText(str(out))
    again.form.out.setModified(True)
    again.show_folder()
    assert again.form.method.currentData() == "eagle3" and again.form.num_prompts.value() == 4
    assert again.evaluate_button.isEnabled() and len(again.charts.train_curve.xData) >= 2
    assert plan.load(again.summary["plan"]).name


def test_train_page_bad_target_is_one_line(qtbot, tmp_path, monkeypatch):
    from app.pages.train_page import TrainPage

    warnings: list[str] = []
    monkeypatch.setattr("app.pages.train_page.QMessageBox.warning", lambda *a: warnings.append(a[2]))
    page = TrainPage()
    qtbot.addWidget(page)
    page.form.target.setCurrentText(str(tmp_path / "no-such-model"))
    page.form.out.setText(str(tmp_path / "run"))
    page.form.out.setModified(True)
    with qtbot.waitSignal(page.finished, timeout=120_000) as ended:
        page.start()
    assert ended.args == ["failed"]
    assert len(warnings) == 1 and "does not exist" in warnings[0] and "\n" not in warnings[0]
    assert "Traceback" not in page.status.text()
    assert not (tmp_path / "run" / "manifest.json").exists()
    assert page.start_button.isEnabled() and page.start_button.text() == "Start"


def test_reusing_another_runs_data_takes_its_settings(qtbot, tmp_path):
    from app.pages.train_page import TrainPage
    from workbench import train

    source = tmp_path / "eagle3"
    source.mkdir()
    cfg = train.TrainConfig(target="demo:smollm2-135m", out=str(source), num_prompts=12, max_tokens=200,
                            seq_length=1024, draft_vocab_size=2048, layer_ids=[3, 9, 20])
    (source / "manifest.json").write_text(json.dumps({"config": cfg.key(), "done": {"prompts": {"prompts": 12}}}))
    page = TrainPage()
    qtbot.addWidget(page)
    form = page.form
    form.method.setCurrentIndex(form.method.findData("dflash"))
    form.name.setText("my-dflash")
    form.out.setText(str(tmp_path / "dflash"))
    page.use_data_of(source)
    # The data settings come from the source; the draft's own (vocabulary, method, name) stay.
    assert (form.num_prompts.value(), form.max_tokens.value(), form.seq_length.value()) == (12, 200, 1024)
    assert form.vocab.value() == 4096
    assert form.method.currentData() == "dflash" and form.name.text() == "my-dflash"
    args = page.argv(tmp_path / "events.jsonl")
    assert args[args.index("--reuse") + 1] == str(source)
    assert args[args.index("--layer-ids") + 1:args.index("--layer-ids") + 4] == ["3", "9", "20"]
    assert args[args.index("--out") + 1] == str(tmp_path / "dflash")
