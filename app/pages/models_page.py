"""The Models page: search the Hub, see sizes, download with progress and cancel, manage the local
Hugging Face cache, start an experiment from a published draft/target pair, or plan a what-if sweep."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QUrl, Qt, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (QGroupBox, QHBoxLayout, QLabel, QLineEdit, QMessageBox, QProgressBar, QPushButton,
                               QSplitter, QTableView, QVBoxLayout, QWidget)

from app.jobs import worker
from app.pages import models_lists
from app.widgets.offline_route import OfflineRoute, select_shape
from app.widgets.tables import EmptyHint, TableModel, listed, table
from app.widgets.whatif_dialog import WhatIfDialog
from workbench import paths
from workbench.plan import catalog
from workbench.usecases import hub, whatif

PROGRESS_STEPS = 1000  # the bar counts per mille: byte counts overflow a Qt int
CACHE_EMPTY = ("No checkpoints in the Hugging Face cache yet. This list shows the models downloaded here (vLLM "
               "reads the same cache): search the Hub above and Download one (or Config only), or pick a model "
               "shape below for a what-if run without weights.")


class ModelsPage(QWidget):
    new_experiment = Signal(dict)  # a plan document made from a catalog pair

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.calls: set[worker.Call] = set()  # Hub work in flight, waited for at shutdown
        self.download: hub.Download | None = None
        self._scanning = False  # a cache scan in flight; `_rescan`: another asked for meanwhile
        self._rescan = False
        self._after_scan: list[Callable[[], None]] = []
        self.gated_url: str | None = None
        self.asked_repo: str | None = None  # the last repo a download asked for: its shape is offered offline

        self.token = QLabel()
        self.search_box = QLineEdit(placeholderText="Search the Hub, e.g. eagle3, DFlash, Qwen3-8B")
        self.search_button = QPushButton("Search")
        self.results = models_lists.results_model()
        self.results_view = table(self.results)
        self.results_empty = EmptyHint(self.results_view, "Models found on the Hugging Face Hub show here: type a "
                                                          "name above (e.g. Qwen3-8B) and press Search.")
        self.size_button = QPushButton("Size")
        self.download_button = QPushButton("Download")
        # The configs and tokenizer without the weights: enough to read a model's shape or to
        # serve it with random weights (--load-format dummy), at a few MB instead of GB.
        self.config_button = QPushButton("Config only")
        self.config_button.setToolTip("Download only the config, tokenizer and generation files, no weights")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.bar = QProgressBar(minimum=0, maximum=PROGRESS_STEPS, value=0)
        self.bar.setTextVisible(False)  # "0%" before any download reads as a download stuck at its start
        self.status = QLabel(wordWrap=True)
        self.gated = QLabel(wordWrap=True)
        self.gated.setVisible(False)
        self.gated_button = QPushButton("Open the model page")
        self.gated_button.setVisible(False)
        self.offline_route = OfflineRoute()  # shown when the Hub cannot be reached

        self.cache = models_lists.cache_model()
        self.cache_view = table(self.cache)
        self.cache_empty = EmptyHint(self.cache_view, CACHE_EMPTY)
        self.refresh_button = QPushButton("Refresh")
        self.delete_button = QPushButton("Delete from cache")

        self.pairs = catalog.load()
        self.catalog = models_lists.catalog_model(self.pairs)
        self.catalog_view = table(self.catalog)
        self.new_button = QPushButton("New experiment from this pair")

        # Published targets as configs alone: served with dummy weights, they cost drafting before
        # any download. What-if plans a sweep on the selected shape or cached model.
        self.shapes = models_lists.shapes_model()
        self.shapes_view = table(self.shapes)
        self.whatif_button = QPushButton("What-if…")
        self.whatif_button.setEnabled(False)
        self.whatif_button.setToolTip("Plan a sweep of the selected shape or cached model from its config alone "
                                      "(dummy weights, imposed acceptance): what drafting costs, before any download")
        self.whatif_dialog: WhatIfDialog | None = None
        self._layout()

        self.search_button.clicked.connect(self.search)
        self.search_box.returnPressed.connect(self.search)
        self.size_button.clicked.connect(self.fetch_size)
        self.download_button.clicked.connect(self.start_download)
        self.config_button.clicked.connect(self.start_config_download)
        self.cancel_button.clicked.connect(self.cancel_download)
        self.gated_button.clicked.connect(self.open_gated_page)
        self.refresh_button.clicked.connect(self.refresh_cache)
        self.delete_button.clicked.connect(self.delete_selected)
        self.new_button.clicked.connect(self.new_from_pair)
        self.whatif_button.clicked.connect(lambda: self.open_whatif())
        self.offline_route.folder_chosen.connect(lambda folder: self.open_whatif((str(folder), folder.name, None)))
        self.offline_route.shape_wanted.connect(self.use_shape)
        for view in (self.shapes_view, self.cache_view):
            view.selectionModel().selectionChanged.connect(lambda *_, v=view: self._target_selected(v))
        self.cache.modelReset.connect(lambda: self._target_selected(self.cache_view))
        self.update_token()
        self.refresh_cache()

    def _layout(self) -> None:
        hub_box = QGroupBox("Hugging Face Hub")
        v = QVBoxLayout(hub_box)
        row = QHBoxLayout()
        row.addWidget(self.search_box, 1)
        row.addWidget(self.search_button)
        v.addLayout(row)
        v.addWidget(self.results_view, 1)
        row = QHBoxLayout()
        for w in (self.size_button, self.download_button, self.config_button, self.cancel_button):
            row.addWidget(w)
        row.addWidget(self.bar, 1)
        v.addLayout(row)
        v.addWidget(self.status)
        row = QHBoxLayout()
        row.addWidget(self.gated, 1)
        row.addWidget(self.gated_button)
        v.addLayout(row)
        v.addWidget(self.offline_route)

        cache_box = QGroupBox("Local cache (shared with vLLM)")
        v = QVBoxLayout(cache_box)
        v.addWidget(self.cache_view, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.refresh_button)
        row.addWidget(self.delete_button)
        v.addLayout(row)

        catalog_box = listed("Published draft/target pairs", self.catalog_view, self.new_button)
        shapes_box = listed("Model shapes (configs only, for what-if sweeps)", self.shapes_view, self.whatif_button)

        split = QSplitter(Qt.Orientation.Vertical)
        for box in (hub_box, cache_box, shapes_box, catalog_box):
            split.addWidget(box)
        outer = QVBoxLayout(self)
        outer.addWidget(self.token)
        outer.addWidget(split, 1)

    # --- helpers --------------------------------------------------------------------------------------------
    def _start(self, work: Callable[..., Any], on_ok: Callable[[Any], None],
               on_progress: Callable[..., None] | None = None, then: Callable[[], None] | None = None,
               on_error: Callable[[hub.HubError], None] | None = None) -> worker.Call:
        """`work()` (or `work(progress)`) off the GUI thread; `on_ok(result)` or the failure said on
        the page (`on_error(HubError)`, or the Hub part's own handling), then `then()` either way."""
        def done(result: Any) -> None:
            self.calls.discard(call)
            on_ok(result)
            if then:
                then()

        def failed(exc: Exception) -> None:
            self.calls.discard(call)
            # Any failure becomes a message, never a crash.
            (on_error or self._failed)(exc if isinstance(exc, hub.HubError) else hub.explain(exc, ""))
            if then:
                then()

        call = worker.run(work, self, done, failed, on_progress)
        self.calls.add(call)
        return call

    def _selected(self, view: QTableView, model: TableModel) -> Any:
        """The record of the view's selected row (of whichever kind the model lists), or None."""
        rows = view.selectionModel().selectedRows()
        return model.row(rows[0].row()) if rows else None

    def _failed(self, exc: hub.HubError) -> None:
        self._set_busy(False)
        self.status.setText(str(exc))
        if isinstance(exc, hub.GatedError):
            self.gated_url = exc.url
            self.gated.setText(f"{exc.repo} is gated: its owner asks you to accept a licence on its model page "
                               "before downloading. Accept it there while logged in, then set HF_TOKEN (or run "
                               "`hf auth login`) and download again.")
        self.gated.setVisible(isinstance(exc, hub.GatedError))
        self.gated_button.setVisible(isinstance(exc, hub.GatedError))
        self.offline_route.setVisible(isinstance(exc, hub.Unreachable))  # a dead end without it

    def _set_busy(self, downloading: bool) -> None:
        self.download_button.setEnabled(not downloading)
        self.config_button.setEnabled(not downloading)
        self.cancel_button.setEnabled(downloading)

    def update_token(self) -> None:
        # Whether a token exists, never the token.
        token = "present" if hub.token_present() else "not set (gated models need HF_TOKEN or `hf auth login`)"
        offline = " · offline mode (HF_HUB_OFFLINE)" if hub.offline() else ""
        self.token.setText(f"Hugging Face token: {token} · cache: {hub.cache_dir()}{offline}")

    # --- actions -------------------------------------------------------------------------------------------
    def search(self) -> None:
        query = self.search_box.text()
        self.status.setText(f"Searching for “{query}”…")
        self._start(lambda: hub.search(query), self._show_results)

    def _show_results(self, hits: list[hub.SearchHit]) -> None:
        self.results.set_rows([models_lists.found_model(h) for h in hits])
        self.status.setText(f"{len(hits)} models")

    def _selected_repo(self) -> str | None:
        row = self._selected(self.results_view, self.results)
        if row is None:
            self.status.setText("Select a model in the results first")
            if hub.offline():  # no search fills the results offline: say what serves instead
                self.offline_route.offer()
        return row.repo if row else None

    def fetch_size(self) -> None:
        repo = self._selected_repo()
        if repo:
            self.status.setText(f"Asking the Hub for the size of {repo}…")
            self._start(lambda: hub.remote(repo), self._show_size)

    def _show_size(self, info: hub.RemoteRepo) -> None:
        for i in range(self.results.rowCount()):
            if self.results.row(i).repo == info.repo:
                self.results.update_row(i, dataclasses.replace(self.results.row(i), size=info.size))
        self.status.setText(f"{info.repo}: {hub.human(info.size)} in {len(info.files)} files")

    def start_config_download(self, repo: str | bool | None = None) -> None:
        self.start_download(repo, config_only=True)

    def start_download(self, repo: str | bool | None = None, config_only: bool = False) -> None:
        repo = repo if isinstance(repo, str) else self._selected_repo()  # clicked() passes a bool
        if not repo or self.download is not None:
            return
        self.gated.hide()
        self.gated_button.hide()
        self.offline_route.hide()
        self.asked_repo = repo
        self.bar.setValue(0)
        self.bar.setTextVisible(True)
        self._set_busy(True)
        self.status.setText(f"Downloading the config files of {repo}…" if config_only else f"Downloading {repo}…")
        download = self.download = hub.Download(repo, allow_patterns=hub.CONFIG_PATTERNS if config_only else None)

        def work(progress: Callable[[int, str], None]) -> tuple[Path, hub.Download]:
            download.progress = lambda done, total, name: progress(
                int(PROGRESS_STEPS * done / total) if total else PROGRESS_STEPS, name)
            return download.run(), download

        self._start(work, self._downloaded, self._progress, then=self._download_ended)

    def _download_ended(self) -> None:
        # Settled once the cache list shows what it left (a whole checkpoint, or a partial one).
        self.refresh_cache(then=self._download_settled)

    def _download_settled(self) -> None:
        self.download = None
        self._set_busy(False)

    def _progress(self, value: int, name: str) -> None:
        self.bar.setValue(value)
        self.bar.setFormat(f"%p% · {name}")

    def _downloaded(self, result: tuple[Path, hub.Download]) -> None:
        folder, download = result
        self._set_busy(False)
        self.bar.setValue(PROGRESS_STEPS)
        if download.allow_patterns == hub.CONFIG_PATTERNS:
            # repo_size stays 0 offline, where only the cache was read.
            of = f" of {hub.human(download.repo_size)}" if download.repo_size else ""
            self.status.setText(f"Downloaded into {folder} (config only: {hub.human(download.total)}{of})")
        else:
            self.status.setText(f"Downloaded into {folder}")

    def cancel_download(self) -> None:
        if self.download is not None:
            self.download.cancel()
            self.status.setText("Cancelling… what was fetched stays in the cache and resumes next time")

    def open_gated_page(self) -> None:
        if self.gated_url:
            QDesktopServices.openUrl(QUrl(self.gated_url))

    def refresh_cache(self, then: Callable[[], None] | None = None) -> None:
        """Scans the Hugging Face cache off the GUI thread (a large cache is many files to stat);
        `then()` once the list shows the scan."""
        self.update_token()
        if then:
            self._after_scan.append(then)
        if self._scanning:
            self._rescan = True  # what changed since the scan began is read by one more
            return
        self._scanning = True
        worker.run(hub.cached, self, self._cache_scanned, self._cache_failed)

    def _cache_scanned(self, repos: list[hub.CachedRepo]) -> None:
        self._scanning = False
        if self._rescan:
            self._rescan = False
            self.refresh_cache()
            return
        self.cache.set_rows(repos)
        self._settle_scan()

    def _cache_failed(self, exc: BaseException) -> None:
        self._scanning = self._rescan = False
        self.status.setText(f"Cannot read the Hugging Face cache: {exc}")
        self._settle_scan()

    def _settle_scan(self) -> None:
        waiting, self._after_scan = self._after_scan, []
        for then in waiting:
            then()

    def ask_delete(self, repo: str, size: int) -> bool:
        """Separate so tests can answer."""
        question = f"Delete {repo} ({hub.human(size)}) from the Hugging Face cache?"
        return QMessageBox.question(self, "Delete from cache", question) == QMessageBox.StandardButton.Yes

    def delete_selected(self) -> None:
        cached = self._selected(self.cache_view, self.cache)
        if cached is None or not self.delete_button.isEnabled() \
                or not self.ask_delete(cached.repo, cached.size + cached.partial):
            return
        repo = cached.repo
        self.delete_button.setEnabled(False)  # one delete at a time: a second click finds it gone
        self.status.setText(f"Deleting {repo}…")

        def deleted(freed: int) -> None:
            self.status.setText(f"Deleted {repo} ({hub.human(freed)} freed)")

        self._start(lambda: hub.delete(repo), deleted, on_error=lambda exc: self.status.setText(str(exc)),
                    then=lambda: self.refresh_cache(then=lambda: self.delete_button.setEnabled(True)))

    def new_from_pair(self) -> None:
        pair = self._selected(self.catalog_view, self.catalog)
        if pair is None:
            self.status.setText("Select a pair in the catalog first")
            return
        self.new_experiment.emit(catalog.plan_document(pair))

    # --- what-if ----------------------------------------------------------------------------------------
    def _target_selected(self, view: QTableView) -> None:
        """One target at a time: choosing a shape drops the cached model chosen before, and back."""
        other = self.cache_view if view is self.shapes_view else self.shapes_view
        if view.selectionModel().hasSelection():
            other.clearSelection()
        target = self.selected_target()
        self.whatif_button.setEnabled(target is not None)
        self.whatif_button.setText(f"What-if: {target[1]}…" if target else "What-if…")

    def selected_target(self) -> tuple[str | None, str, str | None] | None:
        """(plan reference, label, Hub repo) of the selected shape or cached model; the reference is
        None for a cached model without a config.json (a pull that has not fetched one yet)."""
        shape = self._selected(self.shapes_view, self.shapes)
        if shape is not None:
            return f"shape:{shape.name}", shape.name, shape.repo
        cached = self._selected(self.cache_view, self.cache)
        if cached is None:
            return None
        folder = whatif.snapshot_with_config(cached.path, cached.revisions)
        return (str(folder) if folder else None), cached.repo, cached.repo

    def use_shape(self) -> None:
        name = select_shape(self.shapes_view, self.shapes, self.asked_repo)
        self.status.setText(f"Shape {name} selected: What-if plans a sweep on it from its config alone")

    def open_whatif(self, target: tuple[str | None, str, str | None] | None = None) -> None:
        """On `target` (plan reference, label, Hub repo), else on the selected shape or cached model."""
        target = target or self.selected_target()
        reference = target[0] if target else None
        if target is None or reference is None:
            self.status.setText(f"{target[1]} has no config.json in the cache: fetch it first (Config only)"
                                if target else "What-if: select a shape, or a model in the local cache")
            return
        if self.whatif_dialog is not None:
            self.whatif_dialog.deleteLater()
        # Measured curves come from the results database the window has open.
        db = getattr(self.window(), "db_path", None) or paths.default_db()
        # The vLLM the window probed: the dialog says so when it cannot run a what-if plan.
        self.whatif_dialog = WhatIfDialog(reference, target[1], target[2], db, paths.data_dir() / "plans", self,
                                          vllm=getattr(self.window(), "vllm", None))
        self.whatif_dialog.planned.connect(self._whatif_planned)
        self.whatif_dialog.open()

    def _whatif_planned(self, path: Path, doc: dict[str, Any]) -> None:
        self.status.setText(f"What-if plan written to {path}; it is open on the Experiment page")
        self.new_experiment.emit(doc)

    def shutdown(self) -> None:
        """Stop any download and wait for the Hub work in flight, so none outlives the page."""
        self.cancel_download()
        for call in list(self.calls):
            call.wait(30)

