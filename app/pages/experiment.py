"""The Experiment page: a form that builds a plan, shows every vLLM command it will launch, and runs it."""

from __future__ import annotations

import copy
import html
import tomllib
from pathlib import Path
from typing import Any, Literal, overload

import tomli_w
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton, QScrollArea, QSplitter, QVBoxLayout, QWidget

from app.jobs import worker
from app.widgets import theme
from app.widgets.demo_bar import DemoBar
from app.widgets.findings import FindingsPanel, plan_summary
from app.widgets.methods_table import MethodRow, MethodsTable
from app.widgets.plan_fields import KeysBox
from app.widgets.profile_form import ProfileForm
from app.widgets.target_box import TargetBox
from app.widgets.workload_box import WorkloadBox
from app.widgets import form_keep, plan_types
from workbench import methods, plan
from workbench.plan import profiles
from workbench.usecases import commands, findings, host_facts

class ExperimentPage(QWidget):
    run_requested = Signal(object, str)  # the plan, its TOML text

    def __init__(self, vllm: host_facts.VllmInstall, modules: set[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vllm = vllm
        self.modules = modules
        self.db_path: Path | None = None  # for warnings about runs already in the results database
        self.plan_path: Path | None = None
        self.current: plan.Plan | None = None
        self.running = False
        # The document the form edits a copy of, what the form showed of it, and its launch profile.
        self._source: dict[str, Any] = {}
        self._shown: dict[tuple[str, ...], object] = {}
        self._shown_profile: dict[str, Any] | None = None
        self._resolved_profile = profiles.Profile()
        self._pending_run: tuple[str, str | None] | None = None  # Run pressed before the check answered
        self.run_remote: str | None = None
        # "none" until detection answers (off the GUI thread: the vendor tools can take seconds).
        self.host_platform = "none"
        worker.run(host_facts.detect_gpus, self, self._gpus_detected)

        # The plan's keys as fields, made from their declarations (workbench.plan.schema); a key
        # labelled for the form that no group places shows in the group of its table, or below.
        self.target_box = TargetBox()
        self.workload_box = WorkloadBox()
        self.more_box = KeysBox("Server and sweep", ("server", "sweep"))
        self.more_box.place([], skip=("sweep.mode",))  # the Workload group's adaptive N
        self.boxes = (self.target_box, self.workload_box, self.more_box)
        # The fields by name, as the rest of the app and the tests reach them.
        self.name = self.target_box.name
        self.target = self.target_box.target
        self.served_name = self.target_box.served_name
        self.max_model_len = self.target_box.max_model_len
        self.dtype = self.target_box.dtype
        self.enforce_eager = self.target_box.enforce_eager
        self.workloads = self.workload_box.workloads
        self.concurrency = self.workload_box.concurrency
        self.num_prompts = self.workload_box.num_prompts
        self.max_tokens = self.workload_box.max_tokens
        self.warmup = self.workload_box.warmup
        self.repeats = self.workload_box.repeats
        self.temperature = self.workload_box.temperature
        self.top_p = self.workload_box.top_p
        self.ignore_eos = self.workload_box.ignore_eos
        self.adaptive = self.workload_box.adaptive
        self.methods_table = MethodsTable()

        form_widget = QWidget()
        fl = QVBoxLayout(form_widget)
        fl.addWidget(self.target_box)
        self.profile_form = ProfileForm()
        fl.addWidget(self.profile_form)
        fl.addWidget(self.methods_table)
        fl.addWidget(self.workload_box)
        fl.addWidget(self.more_box)
        fl.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_widget)

        self.commands = QPlainTextEdit(readOnly=True)
        self.commands.setFont(theme.mono())
        self.commands.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.commands.setToolTip("The exact vLLM command of every server this plan launches, with its runs")
        self.status = FindingsPanel()
        self.run_button = QPushButton("Run sweep")
        self.run_button.setToolTip("Validate the plan and start the sweep (Ctrl+R)")
        self.run_button.clicked.connect(self.request_run)
        right = QWidget()
        rl = QVBoxLayout(right)
        self.demos = DemoBar()
        rl.addWidget(self.demos)
        rl.addWidget(QLabel("<b>vLLM commands this plan will launch</b>"))
        rl.addWidget(self.commands, 1)
        rl.addWidget(self.status)
        rl.addWidget(self.run_button)
        split = QSplitter()
        split.addWidget(scroll)
        split.addWidget(right)
        split.setSizes([780, 600])
        layout = QVBoxLayout(self)
        layout.addWidget(split)

        self.validate_timer = QTimer(self, singleShot=True, interval=250)
        self.validate_timer.timeout.connect(self.validate)
        for box in self.boxes:
            box.changed.connect(self.validate_timer.start)
        self.profile_form.changed.connect(self.validate_timer.start)
        self.methods_table.changed.connect(self.validate_timer.start)
        self.status.updated.connect(self._answered)

    # --- form <-> plan document -----------------------------------------------------------------
    @property
    def rows(self) -> list[MethodRow]:
        return self.methods_table.rows

    def set_document(self, doc: dict[str, Any]) -> None:
        # The form edits a copy: keys it has no field for, and fields left alone, stay as written.
        self._source = copy.deepcopy(doc)
        sweep = doc.get("sweep", {})
        stem = self.plan_path.stem if self.plan_path else "experiment"
        self.name.setText(str(doc.get("name") or stem))
        for box in self.boxes:
            box.show_document(doc)  # each field its key's value, or the key's default
        self.methods_table.set_entries(doc.get("methods", []))
        self.profile_form.set_parallel(sweep.get("parallel", 1))
        self._resolved_profile = profiles.Profile()
        try:
            self._resolved_profile = profiles.resolve(doc.get("profile"), self._base())
            self.profile_form.set_profile(self._resolved_profile)
        except profiles.ProfileError as exc:
            self.status.setText(f"<span style='color:#D55E00'>Launch profile: {html.escape(str(exc))}</span>")
        self._shown = self._fields(strict=False)
        self._shown_profile = self._profile_table(strict=False)
        self.validate()

    def _base(self) -> Path:
        return self.plan_path.parent if self.plan_path else Path.cwd()

    def local_kind(self) -> bool:
        return self.profile_form.kind.currentData() == "local"

    def _fields(self, strict: bool = True) -> dict[tuple[str, ...], object]:
        """What each field shows, as the document's value at its path (None: no key). Not strict:
        a field whose text makes no value is left out (the document is then written from it)."""
        fields: dict[tuple[str, ...], object] = {}
        for box in self.boxes:
            fields |= box.values(strict)
        parallel = self.profile_form.sweep_parallel()
        fields[("sweep", "parallel")] = None if parallel == 1 else parallel
        return fields

    @overload
    def _profile_table(self, strict: Literal[True] = ...) -> dict[str, Any]: ...

    @overload
    def _profile_table(self, strict: bool) -> dict[str, Any] | None: ...

    def _profile_table(self, strict: bool = True) -> dict[str, Any] | None:
        try:
            return self.profile_form.table()
        except profiles.ProfileError as exc:
            if strict:
                raise plan.PlanError(str(exc)) from None
            return None

    def document(self) -> dict[str, Any]:
        source = self._source
        form_keep.what_if_adaptive(source, self.adaptive.isChecked())
        doc = form_keep.overlay(source, self._shown, self._fields())
        doc["name"] = self.name.text().strip() or "experiment"
        kept = [m for m in source.get("methods", []) if isinstance(m, dict) and m.get("method") == "baseline"]
        doc["methods"] = kept + [form_keep.method_entry(row.source, row.shown, row.entry(i))
                                 for i, row in enumerate(self.rows, 1)]
        profile = form_keep.profile_value(source.get("profile"), self._resolved_profile,
                                          self._shown_profile,
                                          self._profile_table(), self.profile_form.controlled())
        form_keep.set_path(doc, ("profile",), profile)
        return doc

    def text(self) -> str:
        return tomli_w.dumps(self.document())

    def text_for_run(self) -> str:
        """The plan as the runner will read it from another folder: relative paths made absolute."""
        return tomli_w.dumps(form_keep.absolute_paths(self.document(), self._base()))

    # --- files ------------------------------------------------------------------------------------
    def load_file(self, path: Path) -> None:
        try:
            doc = tomllib.loads(path.read_text())
            plan_types.check(doc)  # a value of the wrong type said in one line, before the form converts it
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, plan.PlanError) as exc:
            raise plan.PlanError(f"cannot open {path.name}: {getattr(exc, 'strerror', None) or exc}") from None
        before, before_path = self.document_or_none(), self.plan_path
        self.plan_path = path  # first: relative paths in the plan are read against its folder
        try:
            self.set_document(doc)
        except (TypeError, ValueError, AttributeError, KeyError, methods.MethodError) as exc:
            # The form cannot show it: put back what was there and say why.
            self.plan_path = before_path
            if before is not None:
                self.set_document(before)
            raise plan.PlanError(f"cannot open {path.name}: not a plan the form can show ({exc})") from None

    def document_or_none(self) -> dict[str, Any] | None:
        try:
            return self.document()
        except plan.PlanError:
            return None

    def save_file(self, path: Path) -> None:
        path.write_text(self.text())
        self.plan_path = path

    # --- validation and run -------------------------------------------------------------------------
    def validate(self) -> plan.Plan | None:
        base = self.plan_path.parent if self.plan_path else Path.cwd()
        try:
            text = self.text()
            p = plan.loads(text, path=str(self.plan_path or "plan.toml"), base=base,
                           available_modules=self.modules if self.local_kind() else None)
        except plan.PlanError as exc:
            self.current = None
            self.status.problem(str(exc))
            self.commands.setPlainText("")
            self.run_button.setEnabled(False)
            return None
        launches = commands.preview(p, self.vllm, self.host_platform)
        self.commands.setPlainText("\n".join(commands.preview_lines(launches)))
        self.current = p
        self.status.show_plan(plan_summary(p, self.vllm), self._check_key(text), lambda: self._preflight(p))
        self._enable_run()
        return p

    def _check_key(self, text: str) -> str:
        # The findings depend on the plan, the vLLM that serves it and the runs already stored
        # (the database and its write-ahead log change when a sweep records runs).
        stamps = []
        for f in [self.db_path, Path(f"{self.db_path}-wal")] if self.db_path else []:
            try:
                stamps.append((f.stat().st_mtime_ns, f.stat().st_size))
            except OSError:
                pass  # not there (yet, or any more)
        return f"{text}\n{self.vllm!r}\n{sorted(self.modules)}\n{self.db_path}\n{stamps}"

    def _preflight(self, p: plan.Plan) -> list[findings.Finding]:
        # In the thread that reads it; an unusable results file is the one finding, and blocks Run.
        return findings.preflight_at(p, self.vllm, self.db_path)

    def _enable_run(self) -> None:
        self.run_button.setEnabled(self.current is not None and (self.vllm.found or not self.local_kind())
                                   and not self.running and not self.status.has_errors()
                                   and self._pending_run is None)

    def _gpus_detected(self, found: tuple[str, list[host_facts.Gpu]]) -> None:
        self.host_platform = found[0]
        self.profile_form.set_host(found[0])
        self.validate()

    def request_run(self, remote: str | None = None) -> None:
        """Runs the plan (on `remote`, a host already checked) once its preflight has answered
        clean; pressed before the check answered, the run waits for it off the GUI thread (the
        check may ask amd-smi or nvidia-smi), and an edit of the form meanwhile calls it off."""
        p = self.validate()
        if p is None or self.running:
            return
        key = self._check_key(self.text())
        found = self.status.known(key)
        if found is None:
            self._pending_run = (key, remote)
            self.run_button.setEnabled(False)
            self.run_button.setText("Checking, then running…")
            return
        self._run_checked(p, found, remote)

    def _run_checked(self, p: plan.Plan, found: list[findings.Finding], remote: str | None) -> None:
        if not any(f.level == findings.ERROR for f in found):
            self.run_remote = remote  # read by the window's slot, within the emit
            try:
                self.run_requested.emit(p, self.text())
            finally:
                self.run_remote = None

    def _answered(self) -> None:
        pending, self._pending_run = self._pending_run, None
        if not self.running:
            self.run_button.setText("Run sweep")
        doc = self.document_or_none() if pending is not None else None  # an edit may have broken it since
        if pending is not None and doc is not None and self.current is not None and not self.running \
                and pending[0] == self._check_key(tomli_w.dumps(doc)):
            found = self.status.known(pending[0])
            if found is None:
                self._pending_run = pending  # the answer was for another plan: this one's is coming
            else:
                self._run_checked(self.current, found, pending[1])
        self._enable_run()

    def set_running(self, running: bool) -> None:
        self.running = running
        self._enable_run()
        self.run_button.setText("Sweep running…" if running else "Run sweep")
