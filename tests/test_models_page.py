"""The Models page offscreen, against tests/helpers/hub.py: a local stand-in for the Hugging Face Hub
(unreachable here). Downloads go through huggingface_hub into a tmp HF_HOME."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel

from app.pages.models_page import PROGRESS_STEPS, ModelsPage
from workbench.checkpoints import hub

import pytest


@pytest.fixture
def page(qtbot, stand_in):
    p = ModelsPage()
    qtbot.addWidget(p)
    p.show()
    qtbot.waitExposed(p)
    yield p
    p.shutdown()


def select(view, model, key: str, value: str) -> None:
    row = next(i for i in range(model.rowCount()) if getattr(model.row(i), key) == value)
    view.selectionModel().select(model.index(row, 0), QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)


def test_search_size_download_with_progress_then_delete(page, qtbot, stand_in):
    assert "token: not set" in page.token.text()
    page.search_box.setText("acme")
    page.search_button.click()
    qtbot.waitUntil(lambda: page.results.rowCount() == 2, timeout=10000)
    assert [page.results.row(i).repo for i in range(2)] == ["acme/big-target", "acme/tiny-draft"]

    select(page.results_view, page.results, "repo", "acme/big-target")
    page.size_button.click()
    qtbot.waitUntil(lambda: page.results.row(0).size is not None, timeout=10000)
    assert page.results.data(page.results.index(0, 4)) == "41.9 MB"

    stand_in.delay_s = 0.003
    values: list[int] = []
    page.bar.valueChanged.connect(values.append)
    page.download_button.click()
    assert page.cancel_button.isEnabled() and not page.download_button.isEnabled()
    qtbot.waitUntil(lambda: page.status.text().startswith("Downloaded into"), timeout=60000)
    moving = [v for v in values if 0 < v < PROGRESS_STEPS]
    assert len(set(moving)) >= 2 and moving == sorted(moving)  # it moved, forwards, before the end
    assert page.bar.value() == PROGRESS_STEPS
    qtbot.waitUntil(lambda: page.cache.rowCount() == 1, timeout=5000)
    assert page.cache.row(0).repo == "acme/big-target" and page.download_button.isEnabled()

    page.ask_delete = lambda repo, size: True
    select(page.cache_view, page.cache, "repo", "acme/big-target")
    page.delete_button.click()
    qtbot.waitUntil(lambda: page.cache.rowCount() == 0, timeout=5000)
    assert "41.9 MB freed" in page.status.text()


def test_cancel_keeps_the_partial_download(page, qtbot, stand_in):
    stand_in.delay_s = 0.004
    page.start_download("acme/big-target")
    qtbot.waitUntil(lambda: 0 < page.bar.value(), timeout=60000)
    page.cancel_button.click()
    qtbot.waitUntil(lambda: "cancelled" in page.status.text(), timeout=30000)
    qtbot.waitUntil(lambda: page.download is None and page.download_button.isEnabled(), timeout=10000)
    assert page.cache.rowCount() == 1 and page.cache.row(0).partial > 0


def test_gated_repo_is_explained_with_its_page(page, qtbot, stand_in, monkeypatch):
    opened = []
    monkeypatch.setattr("app.pages.models_page.QDesktopServices.openUrl", lambda url: opened.append(url.toString()))
    page.start_download("google/gated-assistant")
    qtbot.waitUntil(lambda: page.gated_button.isVisible(), timeout=10000)
    assert "is gated" in page.gated.text() and "HF_TOKEN" in page.gated.text()
    page.gated_button.click()
    assert opened == [f"{stand_in.url}/google/gated-assistant"]


def test_new_experiment_from_a_catalog_pair(page, qtbot):
    select(page.catalog_view, page.catalog, "name", "qwen3-8b-speculator-eagle3")
    with qtbot.waitSignal(page.new_experiment, timeout=2000) as sig:
        page.new_button.click()
    doc = sig.args[0]
    assert doc["target"]["model"] == "Qwen/Qwen3-8B"
    assert doc["methods"] == [{"method": "eagle3", "draft": "RedHatAI/Qwen3-8B-speculator.eagle3", "n": [1, 2, 3, 4, 5]}]


def test_models_pass_qtmodeltester(page, qtmodeltester):
    qtmodeltester.check(page.catalog)
    qtmodeltester.check(page.cache)


def test_the_main_window_fills_the_experiment_page(qtbot, tmp_path, vllm_install, stand_in):
    from app.main import MainWindow

    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    assert w.tabs.tabText(4) == "Models"
    select(w.models.catalog_view, w.models.catalog, "name", "demo-first4layers")
    w.models.new_button.click()
    assert w.tabs.currentWidget() is w.experiment
    assert w.experiment.target.text() == "demo:smollm2-135m"
    assert [r.method.currentData() for r in w.experiment.rows] == ["draft_model"]
    qtbot.waitUntil(lambda: w.experiment.run_button.isEnabled(), timeout=5000)
    w.models.shutdown()


def test_config_only_download_fetches_no_weights(page, qtbot, stand_in):
    from helpers.hub import CONFIG_FILES, add_full_repo, weight_files_in_cache

    repo = add_full_repo(stand_in)
    page.search_box.setText("full")
    page.search_button.click()
    qtbot.waitUntil(lambda: page.results.rowCount() == 1, timeout=10000)
    select(page.results_view, page.results, "repo", "acme/full-target")
    page.config_button.click()
    assert not page.config_button.isEnabled() and not page.download_button.isEnabled()
    qtbot.waitUntil(lambda: page.status.text().startswith("Downloaded into"), timeout=60000)
    config_bytes = sum(len(v) for v in CONFIG_FILES.values())
    total = sum(len(v) for v in repo.files.values())
    assert f"(config only: {hub.human(config_bytes)} of {hub.human(total)})" in page.status.text()
    assert weight_files_in_cache("acme/full-target") == [] and not stand_in.gets("/cdn/")
    qtbot.waitUntil(lambda: page.cache.rowCount() == 1 and page.config_button.isEnabled(), timeout=5000)
    assert page.cache.row(0).size == config_bytes


def test_empty_lists_say_how_to_fill_them_and_an_idle_bar_says_nothing(page, qtbot, stand_in):
    hint = page.cache_empty.label
    assert page.cache.rowCount() == 0 and hint.isVisible()
    assert hint.text().startswith("No checkpoints in the Hugging Face cache yet")
    assert "Download" in hint.text() and "what-if" in hint.text()
    assert hint.geometry().intersects(page.cache_view.viewport().rect())  # across the list, not off it
    assert page.results_empty.label.isVisible() and "Search" in page.results_empty.label.text()
    # Idle, the bar shows no "0%": nothing is downloading.
    assert page.bar.isVisible() and not page.bar.isTextVisible()
    page.start_download("acme/tiny-draft")
    assert page.bar.isTextVisible()
    qtbot.waitUntil(lambda: page.status.text().startswith("Downloaded into"), timeout=60000)
    qtbot.waitUntil(lambda: page.cache.rowCount() == 1, timeout=5000)
    assert not hint.isVisible()


def test_config_only_without_the_hub_offers_a_local_folder_or_a_shipped_shape(page, qtbot, stand_in, monkeypatch,
                                                                               tmp_path, demo_models):
    # Offline mode: what Config only would fetch is not in the cache, and the Hub is not asked.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    route = page.offline_route
    assert not route.isVisible()
    page.start_config_download("acme/big-target")
    qtbot.waitUntil(route.isVisible, timeout=10000)
    assert "not in the Hugging Face cache" in page.status.text()
    line = route.label.text()
    assert "open a local model folder" in line and "shipped shape" in line and "\n" not in line
    assert route.folder_button.toolTip() and route.shape_button.toolTip()

    route.shape_button.click()  # selects a shape: What-if plans on it without any download
    target = page.selected_target()
    assert target is not None and target[0].startswith("shape:") and page.whatif_button.isEnabled()
    assert target[1] in page.status.text()

    folder = next(iter(demo_models.values()))
    monkeypatch.setattr("app.widgets.offline_route.QFileDialog.getExistingDirectory", lambda *a, **k: str(folder))
    route.folder_button.click()  # a local model folder: What-if on it, served from its config
    assert page.whatif_dialog is not None and page.whatif_dialog.target == str(folder)
    page.whatif_dialog.reject()
    qtbot.waitUntil(lambda: not page.whatif_dialog.busy(), timeout=30000)

    monkeypatch.setattr("app.widgets.offline_route.QFileDialog.getExistingDirectory", lambda *a, **k: str(tmp_path))
    route.folder_button.click()  # a folder without a config is said in one line, and opens nothing
    assert f"{tmp_path.name} has no config.json" in route.label.text() and "\n" not in route.label.text()

    # Config only with nothing selected (a search is refused offline) offers the same.
    route.hide()
    page.config_button.click()
    assert route.isVisible()


def test_an_unreachable_hub_offers_the_same(page, qtbot, stand_in, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing answers there
    page.start_config_download("acme/big-target")
    qtbot.waitUntil(page.offline_route.isVisible, timeout=30000)
    assert "cannot reach the Hub" in page.status.text()
