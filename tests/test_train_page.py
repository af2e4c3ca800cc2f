"""The Train page driven offscreen: a tiny real training run (the target's responses from a real vLLM
CPU server, speculators' prepare-data and training, the real target's hidden states) cancelled
during the training step, resumed from the page, then evaluated in one click."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
from PySide6.QtCore import Qt

from workbench import plan
from workbench.plan import catalog

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


def test_train_page_cancel_in_training_resume_and_evaluate(qtbot, tmp_path, draft_server, monkeypatch):
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

    # Cancel as soon as the first training step has been reported.
    with qtbot.waitSignal(page.finished, timeout=600_000) as ended:
        qtbot.mouseClick(page.start_button, Qt.LeftButton)
        assert page.running and page.cancel_button.isEnabled() and not page.start_button.isEnabled()
        curve = page.charts.train_curve
        qtbot.waitUntil(lambda: len(curve.xData if curve.xData is not None else []) > 0, timeout=600_000)
        assert page.steps.items["train"].text(1) == "running"
        qtbot.mouseClick(page.cancel_button, Qt.LeftButton)
    assert ended.args == ["cancelled"], (ended.args, page.status.text(), warnings)
    assert not warnings
    done = json.loads((out / "manifest.json").read_text())["done"]
    assert set(done) == {"prompts", "responses", "prepare", "hidden_states"}
    assert done["responses"]["responses"] == 4
    assert page.steps.items["hidden_states"].text(1) == "done"
    assert page.steps.items["train"].text(1) == "cancelled"
    assert page.start_button.text() == "Resume" and "resume" in page.status.text().lower()
    assert not _children_in(out), "the training subprocess outlived the cancel"

    # Resume from the page: the finished steps are skipped, training runs to the end.
    with qtbot.waitSignal(page.finished, timeout=600_000) as ended:
        qtbot.mouseClick(page.start_button, Qt.LeftButton)
    assert ended.args == ["done"], (page.status.text(), warnings)
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
