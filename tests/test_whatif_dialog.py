"""What-if from the Models page: a target (a shipped shape or a cached config) and its drafts, each
with an imposed curve, written as a plan and opened on the Experiment page, whose preflight refuses
it on vLLM's CPU build before anything starts. Also the plan text it is built from."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from PySide6.QtCore import QItemSelectionModel, QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from app.widgets.whatif_dialog import WhatIfDialog
from workbench import plan
from workbench.usecases import findings, whatif

TYPED = [0.8, 0.6, 0.45]


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """Plans and materialised shapes go to a throwaway folder."""
    monkeypatch.setenv("DRAFTBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache list, never the user's
    return tmp_path / "data"


def select(view, model, key: str, value: str) -> None:
    row = next(i for i in range(model.rowCount()) if getattr(model.row(i), key) == value)
    view.selectionModel().select(model.index(row, 0), QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)


def row_of(dialog, method: str):
    return next(r for r in dialog.rows if r.method.currentData() == method)


def checked(qtbot, dialog) -> str:
    # The answer to the form as it is now: no check waiting for a pause in typing, none in flight.
    qtbot.waitUntil(lambda: not dialog.busy(), timeout=30000)
    return dialog.message.text()


def plans(data_dir) -> list:
    folder = data_dir / "plans"
    return sorted(folder.glob("*.toml")) if folder.exists() else []


# --- the plan text ------------------------------------------------------------------------------
def test_plan_text_is_a_what_if_plan_with_every_curve_form(data_dir):
    text = whatif.plan_text("shape:qwen3-8b", [
        ("eagle3", "shape:qwen3-8b-eagle3", [1, 3], TYPED),
        ("dflash", "shape:qwen3-8b-dflash", [3, 7], {"p1": 0.9, "decay": 0.5}),
        ("dspark", "shape:qwen3-8b-dspark", [3], {"mal": 2.5}),
        ("eagle3", "shape:qwen3-8b-eagle3", [2], {"rates": [0.7, 0.5], "source": "measured: run 9"}),
    ], concurrency=[1, 8], max_tokens=64, num_prompts=8)
    p = plan.loads(text, path="what-if.toml")
    assert p.mode == "what-if" and p.name == "what-if-qwen3-8b"
    imposed = {(s.method, s.n, s.imposed_source): s.imposed for s, _ in p.servers()}
    assert imposed[("baseline", None, None)] is None
    assert imposed[("eagle3", 1, "typed")] == (0.8,) and imposed[("eagle3", 3, "typed")] == tuple(TYPED)
    assert imposed[("dflash", 7, "typed: p1 0.9, decay 0.5")][:3] == (0.9, 0.45, 0.225)
    assert imposed[("dspark", 3, "typed: MAL 2.5")] == (1.0, 0.5, 0.0)
    assert imposed[("eagle3", 2, "measured: run 9")] == (0.7, 0.5)
    run = p.runs[-1]
    assert (run.concurrency, run.max_tokens, run.num_prompts, run.ignore_eos, run.temperature) == (8, 64, 8, True, 0.0)
    assert all(s.what_if for s, _ in p.servers())
    # Defaults: the concurrencies 1, 16, 64 and 256 tokens.
    p = plan.loads(whatif.plan_text("shape:qwen3-8b", [("eagle3", "shape:qwen3-8b-eagle3", [1], [0.5])]))
    assert sorted({r.concurrency for r in p.runs}) == [1, 16, 64] and p.runs[0].max_tokens == 256


def test_plan_text_with_a_bad_curve_is_refused_by_the_plan_in_one_line():
    text = whatif.plan_text("shape:qwen3-8b", [("eagle3", "shape:qwen3-8b-eagle3", [1, 3], [0.5, 0.7, 0.2])])
    with pytest.raises(plan.PlanError) as err:
        plan.loads(text)
    assert "must not increase" in str(err.value) and "\n" not in str(err.value)


def test_defaults_drafts_and_new_files(tmp_path):
    assert whatif.default_ns("eagle3") == [1, 3, 5] and whatif.default_ns("dflash") == [3, 7]
    shipped = [("eagle3", "shape:qwen3-8b-eagle3"), ("dflash", "shape:qwen3-8b-dflash"),
               ("dspark", "shape:qwen3-8b-dspark")]
    assert whatif.drafts_for("shape:qwen3-8b") == shipped
    assert whatif.drafts_for("Qwen/Qwen3-8B") == shipped  # the repo a shape mirrors
    assert whatif.drafts_for("shape:mimo-7b-rl") == [("mtp", None)]  # its own MTP layer
    assert whatif.drafts_for("acme/unknown") == []
    first = whatif.write_new(tmp_path / "plans", "what-if-x", "a")
    second = whatif.write_new(tmp_path / "plans", "what-if-x", "b")
    assert (first.name, second.name) == ("what-if-x.toml", "what-if-x-2.toml") and first.read_text() == "a"
    snapshot = tmp_path / "repo" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    assert whatif.snapshot_with_config(tmp_path / "repo", ["abc"]) is None
    (snapshot / "config.json").write_text("{}")
    assert whatif.snapshot_with_config(tmp_path / "repo", ["abc"]) == snapshot


# --- the dialog, from the Models page to the Experiment page ----------------------------------------
def test_a_shape_what_if_is_written_opened_and_refused_on_the_cpu_build(qtbot, data_dir, tmp_path, vllm_install,
                                                                        monkeypatch):
    from app.main import MainWindow

    started = []
    monkeypatch.setattr("app.main.Sweep.start", lambda *args, **kwargs: started.append(args))
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    w.show()
    assert not w.models.whatif_button.isEnabled()
    select(w.models.shapes_view, w.models.shapes, "name", "qwen3-8b")
    assert w.models.whatif_button.isEnabled() and "qwen3-8b" in w.models.whatif_button.text()
    w.models.whatif_button.click()
    dialog = w.models.whatif_dialog
    assert dialog.isVisible() and dialog.db_path == tmp_path / "results.sqlite"
    assert [(r.method.currentData(), r.draft.text(), r.n.text()) for r in dialog.rows] == [
        ("eagle3", "shape:qwen3-8b-eagle3", "1, 3, 5"), ("dflash", "shape:qwen3-8b-dflash", "3, 7"),
        ("dspark", "shape:qwen3-8b-dspark", "3, 7")]
    assert "unconditional per-position" in dialog.rows[0].source.rates.toolTip()

    eagle3 = row_of(dialog, "eagle3")
    eagle3.n.setText("1, 3")
    eagle3.source.set_kind("typed")
    eagle3.source.rates.setText("0.8, 0.6, 0.45")
    dflash = row_of(dialog, "dflash")
    dflash.source.set_kind("decay")
    dflash.source.p1.setValue(0.9)
    dflash.source.decay.setValue(0.8)
    dialog.remove_row(row_of(dialog, "dspark"))
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    # This host's vLLM is the CPU build: the dialog says so in red, and still writes the plan.
    assert checked(qtbot, dialog).startswith("✖ 15 runs on 5 servers (the baseline included) planned, "
                                             "but not runnable here: a what-if sweep needs a vLLM")

    with qtbot.waitSignal(dialog.planned, timeout=30000) as sig:
        qtbot.keyClick(dialog, Qt.Key_Return)  # Enter is OK
    path, doc = sig.args
    assert [path] == plans(data_dir) and not dialog.isVisible()
    p = plan.load(path)
    assert p.mode == "what-if"
    imposed = {(s.method, s.n): s.imposed for s, _ in p.servers()}
    assert imposed == {("baseline", None): None, ("eagle3", 1): (0.8,), ("eagle3", 3): (0.8, 0.6, 0.45),
                       ("dflash", 3): (0.9, 0.72, 0.576), ("dflash", 7): (0.9, 0.72, 0.576, 0.4608, 0.36864,
                                                                          0.294912, 0.23593)}

    # The Experiment page shows it, what-if mode and curves kept, and the preflight refuses it.
    page = w.experiment
    assert w.tabs.currentWidget() is page and str(path) in w.models.status.text()
    assert page.target.text() == "shape:qwen3-8b"
    assert [(r.method.currentData(), r.n.text()) for r in page.rows] == [("eagle3", "1, 3"), ("dflash", "3, 7")]
    assert page.current is not None and page.current.mode == "what-if"
    assert [s.imposed for s, _ in page.current.servers()] == [s.imposed for s, _ in p.servers()]
    requested = []
    page.run_requested.connect(lambda *args: requested.append(args))
    qtbot.waitUntil(lambda: "checking" not in page.status.text(), timeout=30000)
    errors = [f for f in page.status.findings if f.level == findings.ERROR]
    assert len(errors) == 1 and "CPU build" in str(errors[0]) and "\n" not in str(errors[0])
    assert "what-if sweep needs a vLLM that can impose acceptance" in page.status.text()
    assert not page.run_button.isEnabled()
    page.request_run()
    qtbot.keyClick(page, Qt.Key_R, Qt.ControlModifier)
    assert requested == [] and started == [] and w.sweep is None
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children  # no server started

    page.adaptive.setChecked(True)  # a what-if sweep runs every N: said in one line
    assert page.validate() is None and "cannot be adaptive" in page.status.text()
    page.adaptive.setChecked(False)
    assert page.validate() is not None and page.current.mode == "what-if"

    # Another plan in the form leaves what-if behind.
    select(w.models.catalog_view, w.models.catalog, "name", "demo-first4layers")
    w.models.new_button.click()
    assert page.current is not None and page.current.mode == "exhaustive"
    w.models.shutdown()


@pytest.fixture
def dialog(qtbot, data_dir):
    def make(target="shape:qwen3-8b", label="qwen3-8b", repo="Qwen/Qwen3-8B", db=None):
        d = WhatIfDialog(target, label, repo, db, data_dir / "plans")
        qtbot.addWidget(d)
        d.show()
        return d
    return make


def test_a_bad_curve_is_one_line_in_the_dialog_and_writes_nothing(qtbot, dialog, data_dir):
    d = dialog()
    eagle3 = row_of(d, "eagle3")
    eagle3.source.set_kind("typed")
    eagle3.source.rates.setText("0.5, 0.7, 0.2, 0.1, 0.05")
    message = checked(qtbot, d)
    assert "methods #1.acceptance: rates must not increase (position 2: 0.7 > 0.5)" in message
    assert "\n" not in message and not d.ok.isEnabled()
    d.accept()
    assert checked(qtbot, d) == message and d.isVisible() and plans(data_dir) == []

    eagle3.source.rates.setText("0.8, nope")
    assert "write rates between 0 and 1" in checked(qtbot, d)
    eagle3.source.rates.setText("0.8, 0.6")  # too short for N=5
    assert "too few for N=5" in checked(qtbot, d)
    eagle3.n.setText("1, x")
    assert "methods #1 N values: write whole numbers" in checked(qtbot, d)
    eagle3.n.setText("1, 2")
    assert checked(qtbot, d).startswith("✔")
    row_of(d, "dflash").source.set_kind("published")  # the shipped tables measured N up to 5, not 7
    assert "methods #2" in checked(qtbot, d) and "too few for N=7" in d.message.text()
    assert plans(data_dir) == []


def test_a_measured_run_s_curve_from_the_results_database(qtbot, dialog, data_dir, recorded_db):
    d = dialog(db=recorded_db)
    for row in d.rows[1:]:
        d.remove_row(row)
    eagle3 = d.rows[0]
    eagle3.n.setText("1, 3")
    eagle3.source.set_kind("measured")
    eagle3.source.run_id.setValue(9999)
    assert checked(qtbot, d) == "no run 9999 in this database"
    eagle3.source.run_id.setValue(1)
    assert "run 1 measured no acceptance" in checked(qtbot, d)
    eagle3.source.run_id.setValue(9)  # draft_model N=3, measured on one H200
    assert checked(qtbot, d).startswith("✔")
    with qtbot.waitSignal(d.planned, timeout=30000) as sig:
        d.ok.click()
    server = next(s for s, _ in plan.load(sig.args[0]).servers() if s.n == 3)
    assert server.imposed_source.startswith("measured: run 9 (draft_model N=3") and len(server.imposed) == 3


def test_a_cached_config_is_a_target_with_a_free_draft_field(qtbot, data_dir, stand_in):
    from app.pages.models_page import ModelsPage

    page = ModelsPage()
    qtbot.addWidget(page)
    page.start_config_download("acme/tiny-draft")
    qtbot.waitUntil(lambda: page.cache.rowCount() == 1 and page.download is None, timeout=60000)
    select(page.shapes_view, page.shapes, "name", "llama-3.1-8b")
    select(page.cache_view, page.cache, "repo", "acme/tiny-draft")
    assert not page.shapes_view.selectionModel().hasSelection()  # one target at a time
    target, label, repo = page.selected_target()
    assert (label, repo) == ("acme/tiny-draft", "acme/tiny-draft") and (Path(target) / "config.json").is_file()
    page.whatif_button.click()
    d = page.whatif_dialog
    assert d.target == target and [(r.method.currentData(), r.draft.text()) for r in d.rows] == [("eagle3", "")]
    assert checked(qtbot, d) == "methods #1: eagle3 needs a draft checkpoint (`draft = ...`)"
    d.rows[0].draft.setText("shape:llama-3.1-8b-eagle3")
    assert checked(qtbot, d).startswith("✔")
    d.rows[0].method.setCurrentIndex(d.rows[0].method.findData("dflash"))
    assert d.rows[0].n.text() == "3, 7"  # the defaults follow the method while untouched
    qtbot.keyClick(d, Qt.Key_Escape)  # Esc cancels: nothing written
    assert not d.isVisible() and plans(data_dir) == []
    page.shutdown()


def test_fields_take_the_wheel_only_when_focused(qtbot, dialog):
    d = dialog()
    box = d.max_tokens
    assert box.focusPolicy() == Qt.StrongFocus
    assert row_of(d, "eagle3").source.kind.focusPolicy() == Qt.StrongFocus
    d.concurrency.setFocus()

    def wheel() -> None:
        event = QWheelEvent(QPointF(5, 5), QPointF(box.mapToGlobal(QPoint(5, 5))), QPoint(0, 0), QPoint(0, 120),
                            Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
        QApplication.sendEvent(box, event)

    wheel()
    assert box.value() == 256
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=2000)
    wheel()
    assert box.value() == 257


def test_the_experiment_page_keeps_a_prompt_table_and_a_what_if_plan(qtbot, data_dir, tmp_path, vllm_install):
    """A plan whose num_prompts scales with concurrency opens on the Experiment page and comes back
    out of the form as it went in (the form shows the table's minimum)."""
    from app.main import MainWindow

    path = Path(__file__).resolve().parents[1] / "docs" / "gpu" / "what-if" / "qwen3-8b.toml"
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    page = w.experiment
    page.load_file(path)
    assert page.num_prompts.value() == 16
    original, shown = plan.load(path), plan.loads(page.text_for_run())
    assert [(r.concurrency, r.num_prompts) for r in shown.runs] == [(r.concurrency, r.num_prompts) for r in original.runs]
    assert [s.imposed for s, _ in shown.servers()] == [s.imposed for s, _ in original.servers()]
    assert shown.mode == "what-if"
    page.num_prompts.setValue(40)  # a count the user typed replaces the table
    assert {r.num_prompts for r in plan.loads(page.text_for_run()).runs} == {40}


def test_on_the_cpu_build_the_dialog_says_red_that_this_host_cannot_run_it(qtbot, data_dir, vllm_install):
    # The local vLLM is the CPU build: its engine stops at the first request of a what-if run.
    assert vllm_install.build == "cpu"
    d = WhatIfDialog("shape:qwen3-8b", "qwen3-8b", "Qwen/Qwen3-8B", None, data_dir / "plans", vllm=vllm_install)
    qtbot.addWidget(d)
    d.show()
    message = checked(qtbot, d)
    assert message.startswith("✖") and "✔" not in message and "\n" not in message
    assert "the CPU build" in message and "Synthetic acceptance not supported with CPU sampling" in message
    assert "color: #D55E00" in d.message.styleSheet()
    # The plan can still be written, for a host whose vLLM can impose acceptance.
    assert d.ok.isEnabled() and "CUDA or ROCm" in d.ok.toolTip()
