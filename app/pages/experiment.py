"""The Experiment page: a form that builds a plan, shows every vLLM command it will launch, and runs it."""

from __future__ import annotations

import copy
import html
import tomllib
from pathlib import Path

import tomli_w
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
    QPlainTextEdit, QPushButton, QScrollArea, QSpinBox, QSplitter, QVBoxLayout, QWidget,
)

from app.jobs import worker
from app.widgets import theme
from app.widgets.demo_bar import DemoBar
from app.widgets.workload_list import WorkloadList
from app.widgets.findings import FindingsPanel, plan_summary
from app.widgets.long_value import LongValueEdit
from app.widgets.methods_table import MethodsTable, parse_ints
from app.widgets.profile_form import ProfileForm
from app.widgets import form_keep, plan_types
from workbench import methods, plan
from workbench.host import engine, gpus
from workbench.plan import profiles
from workbench.usecases import commands, findings

class ExperimentPage(QWidget):
    run_requested = Signal(object, str)  # the plan, its TOML text

    def __init__(self, vllm: engine.VllmInstall, modules: set[str], parent=None):
        super().__init__(parent)
        self.vllm = vllm
        self.modules = modules
        self.db_path: Path | None = None  # for warnings about runs already in the results database
        self.plan_path: Path | None = None
        self.current: plan.Plan | None = None
        self.running = False
        # The document the form edits a copy of, what the form showed of it, and its launch profile.
        self._source: dict = {}
        self._shown: dict = {}
        self._shown_profile: dict | None = None
        self._resolved_profile = profiles.Profile()
        self._pending_run: tuple[str, str | None] | None = None  # Run pressed before the check answered
        self.run_remote: str | None = None
        # "none" until detection answers (off the GUI thread: the vendor tools can take seconds).
        self.host_platform = "none"
        worker.run(gpus.detect, self, self._gpus_detected)

        self.name = QLineEdit()
        self.target = LongValueEdit()
        self.target.setToolTip("The model being served: a folder, a Hugging Face repo id, or demo:smollm2-135m")
        target_browse = QPushButton("…")
        target_browse.setFixedWidth(28)
        target_browse.clicked.connect(self._browse_target)
        target_row = QHBoxLayout()
        target_row.addWidget(self.target)
        target_row.addWidget(target_browse)
        self.served_name = QLineEdit()
        self.max_model_len = QSpinBox(minimum=64, maximum=10_000_000, singleStep=1024)
        self.dtype = QComboBox()
        self.dtype.addItems(["auto", "bfloat16", "float16", "float32"])
        self.enforce_eager = QCheckBox("enforce eager (skip graph compilation; faster start)")

        self.methods_table = MethodsTable()

        self.workloads = WorkloadList()
        add_file = QPushButton("Add prompt file…")
        add_file.clicked.connect(lambda: self.workloads.add_file())
        self.concurrency = QLineEdit()
        self.concurrency.setToolTip("Requests in flight at once; one run per value, e.g. 1, 4")
        # 0 reads "auto": repeats = "auto" in the plan (workbench.analysis.repeats).
        self.repeats = QSpinBox(minimum=0, maximum=100)
        self.repeats.setSpecialValueText("auto")
        self.repeats.setToolTip("Repeats of every run, for a mean and a confidence interval. auto (below 1): until "
                                "the 95 % interval of its throughput is within ±2 %, at most 5 times")
        self.num_prompts = QSpinBox(minimum=1, maximum=100000)
        self.max_tokens = QSpinBox(minimum=1, maximum=1_000_000)
        self.max_tokens.setToolTip("Maximum output tokens per request")
        self.warmup = QSpinBox(minimum=0, maximum=1000)
        self.warmup.setToolTip("Warm-up requests before each measurement window (not measured)")
        self.temperature = QDoubleSpinBox(minimum=0.0, maximum=2.0, singleStep=0.1, decimals=2)
        self.temperature.setToolTip("Sampling temperature, always sent explicitly: acceptance depends on it")
        self.top_p = QDoubleSpinBox(minimum=0.01, maximum=1.0, singleStep=0.05, decimals=2)
        self.ignore_eos = QCheckBox("ignore EOS (forces every answer to max tokens)")
        self.ignore_eos.setToolTip("Generation continues past the end of each answer: output lengths become fixed, "
                                   "but drafting padding text distorts acceptance")
        self.adaptive = QCheckBox("adaptive N (predict the best N instead of running every N)")
        self.adaptive.setToolTip("Runs the baseline, the largest and the smallest N, predicts speedup for every N, "
                                 "then runs only the predicted best (and a close rival); see docs/recommend-n.md")

        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Target", target_row)
        form.addRow("Served name", self.served_name)
        form.addRow("Max model length", self.max_model_len)
        form.addRow("dtype", self.dtype)
        form.addRow("", self.enforce_eager)
        wl = QVBoxLayout()
        wl.addWidget(self.workloads)
        wl.addWidget(add_file, alignment=Qt.AlignLeft)
        work = QGroupBox("Workload")
        wf = QFormLayout(work)
        wf.addRow("Prompt sets", wl)
        wf.addRow("Concurrency", self.concurrency)
        wf.addRow("Prompts per run", self.num_prompts)
        wf.addRow("Max tokens", self.max_tokens)
        wf.addRow("Warm-up requests", self.warmup)
        wf.addRow("Repeats", self.repeats)
        wf.addRow("Temperature", self.temperature)
        wf.addRow("top-p", self.top_p)
        wf.addRow("", self.ignore_eos)
        wf.addRow("", self.adaptive)

        form_widget = QWidget()
        fl = QVBoxLayout(form_widget)
        target_group = QGroupBox("Target")
        target_group.setLayout(form)
        fl.addWidget(target_group)
        self.profile_form = ProfileForm()
        fl.addWidget(self.profile_form)
        fl.addWidget(self.methods_table)
        fl.addWidget(work)
        fl.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_widget)

        self.commands = QPlainTextEdit(readOnly=True)
        self.commands.setFont(theme.mono())
        self.commands.setLineWrapMode(QPlainTextEdit.WidgetWidth)
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
        for w in (self.name, self.target, self.served_name, self.concurrency):
            w.textChanged.connect(self.validate_timer.start)
        for w in (self.max_model_len, self.repeats, self.num_prompts, self.max_tokens, self.warmup):
            w.valueChanged.connect(self.validate_timer.start)
        for w in (self.temperature, self.top_p):
            w.valueChanged.connect(self.validate_timer.start)
        self.dtype.currentIndexChanged.connect(self.validate_timer.start)
        self.enforce_eager.toggled.connect(self.validate_timer.start)
        self.ignore_eos.toggled.connect(self.validate_timer.start)
        self.adaptive.toggled.connect(self.validate_timer.start)
        self.workloads.itemChanged.connect(self.validate_timer.start)
        self.profile_form.changed.connect(self.validate_timer.start)
        self.methods_table.changed.connect(self.validate_timer.start)
        self.status.updated.connect(self._answered)

    # --- form <-> plan document -----------------------------------------------------------------
    @property
    def rows(self):
        return self.methods_table.rows

    def _browse_target(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Target model folder")
        if folder:
            self.target.setText(folder)

    def set_document(self, doc: dict) -> None:
        # The form edits a copy: keys it has no field for, and fields left alone, stay as written.
        self._source = copy.deepcopy(doc)
        d = form_keep.defaults()
        t = doc.get("target", {})
        w = doc.get("workload", {})
        sweep = doc.get("sweep", {})
        stem = self.plan_path.stem if self.plan_path else "experiment"
        self.name.setText(str(doc.get("name") or stem))
        self.target.setText(str(t.get("model", "")))
        self.served_name.setText(str(t.get("served_name", "")))
        self.max_model_len.setValue(int(t.get("max_model_len", d.max_model_len)))
        self.dtype.setCurrentText(str(t.get("dtype", d.dtype)))
        self.enforce_eager.setChecked(bool(t.get("enforce_eager", d.enforce_eager)))
        self.methods_table.set_entries(doc.get("methods", []))
        names = w.get("names", d.names)
        names = names if isinstance(names, list) else [names]
        self.workloads.set_names(names)
        concurrency = w.get("concurrency", d.concurrency)
        self.concurrency.setText(", ".join(str(c) for c in (concurrency if isinstance(concurrency, list)
                                                             else [concurrency])))
        self.repeats.setValue(0 if w.get("repeats") == "auto" else int(w.get("repeats", d.repeats)))
        prompts = w.get("num_prompts", d.num_prompts)
        # {per_concurrency, min}: the spin box shows the least count; the table is kept unless changed.
        self.num_prompts.setValue(int(prompts.get("min", 1) if isinstance(prompts, dict) else prompts))
        self.max_tokens.setValue(int(w.get("max_tokens", d.max_tokens)))
        self.warmup.setValue(int(w.get("warmup", d.warmup)))
        self.temperature.setValue(float(w.get("temperature", 0.0)))
        self.top_p.setValue(float(w.get("top_p", d.top_p)))
        self.ignore_eos.setChecked(bool(w.get("ignore_eos", d.ignore_eos)))
        self.adaptive.setChecked(sweep.get("mode") == "adaptive")
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
        names = self.workloads.names()
        fields = {
            ("target", "model"): self.target.text().strip(),
            ("target", "served_name"): self.served_name.text().strip() or None,
            ("target", "max_model_len"): self.max_model_len.value(),
            ("target", "dtype"): self.dtype.currentText(),
            ("target", "enforce_eager"): self.enforce_eager.isChecked(),
            ("workload", "names"): names,
            ("workload", "num_prompts"): self.num_prompts.value(),
            ("workload", "max_tokens"): self.max_tokens.value(),
            ("workload", "warmup"): self.warmup.value(),
            ("workload", "repeats"): self.repeats.value() or "auto",
            ("workload", "temperature"): round(self.temperature.value(), 4),
            ("workload", "top_p"): round(self.top_p.value(), 4),
            ("workload", "ignore_eos"): self.ignore_eos.isChecked(),
            ("sweep", "mode"): "adaptive" if self.adaptive.isChecked() else None,
            ("sweep", "parallel"): None if self.profile_form.sweep_parallel() == 1 else self.profile_form.sweep_parallel(),
        }
        try:
            fields[("workload", "concurrency")] = parse_ints(self.concurrency.text(), "concurrency")
        except plan.PlanError:
            if strict:
                raise
        return fields

    def _profile_table(self, strict: bool = True) -> dict | None:
        try:
            return self.profile_form.table()
        except profiles.ProfileError as exc:
            if strict:
                raise plan.PlanError(str(exc)) from None
            return None

    def document(self) -> dict:
        source = self._source
        form_keep.what_if_adaptive(source, self.adaptive.isChecked())
        doc = form_keep.overlay(source, self._shown, self._fields())
        doc["name"] = self.name.text().strip() or "experiment"
        kept = [m for m in source.get("methods", []) if isinstance(m, dict) and m.get("method") == "baseline"]
        doc["methods"] = kept + [form_keep.method_entry(row.source, row.shown, row.entry(i))
                                 for i, row in enumerate(self.rows, 1)]
        profile = form_keep.profile_value(source.get("profile"), self._resolved_profile, self._shown_profile,
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

    def document_or_none(self) -> dict | None:
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

    def _gpus_detected(self, found: tuple) -> None:
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

    def _run_checked(self, p: plan.Plan, found: list, remote: str | None) -> None:
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
        if doc is not None and self.current is not None and not self.running \
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
