"""The What-if dialog (Models page): which drafts to cost on a target served from its config alone,
at which N and concurrencies, each told to accept a curve. It writes the plan into the plans folder
and hands it to the Experiment page, where the preflight and Run apply as to any plan."""

from __future__ import annotations

import html
import itertools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QStackedWidget, QVBoxLayout, QWidget)

from app.jobs import worker
from app.widgets.findings import RED
from app.widgets.methods_table import parse_ints
from app.widgets.wheel_guard import ComboBox, DoubleSpinBox, SpinBox
from workbench import methods, plan
from workbench.plan import curves
from workbench.plan.fields import SHAPE_PREFIX
from workbench.usecases.host_facts import VllmInstall
from workbench.usecases import findings, whatif

RATE_TIP = ("Rates are unconditional per-position rates: p_i is the chance that the first i drafted tokens are "
            "all accepted (vLLM's accepted-at-position-i / drafts), so they never increase along the draft. "
            "One curve serves every N of its method: N takes its first N positions.")
SOURCES = {  # kind: (label, what it means)
    "typed": ("typed rates", "Type one rate per position up to the largest N, e.g. 0.8, 0.6, 0.45. " + RATE_TIP),
    "decay": ("p1 + decay", "p_i = p1 · decay^(i−1): position 1 accepted with p1, every further position with "
                            "the same conditional chance (decay). " + RATE_TIP),
    "mal": ("MAL", "A mean acceptance length (tokens per step, 1 + accepted drafts), resolved per N as vLLM "
                   "resolves it: whole positions always accepted, one partly, the rest never."),
    "published": ("published curve", "A per-position table a publication measured (resources/curves/): at an "
                                     "N it measured, that N's own curve, else its longest curve's first N."),
    "measured": ("measured run", "A completed speculative run in the current results database: its measured "
                                 "per-position acceptance, imposed as vLLM's counters read it."),
}

WRITE_ELSEWHERE_TIP = ("Writes the plan and opens it; this host's vLLM cannot run it. Run it where a CUDA or ROCm "
                       "build of vLLM serves (Sweep > Run on remote host, or copy the plan there).")


@dataclass(frozen=True)
class Measured:
    """A measured run's curve, read from the database off the GUI thread when the plan is built."""
    run_id: int


# One method of the plan: (method, draft, N values, its `acceptance =` value or a Measured marker).
Entry = tuple[str, str | None, list[int], object]


def _rate_box(value: float, tip: str) -> DoubleSpinBox:
    box = DoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=3, value=value)
    box.setToolTip(tip)
    return box


class SourceEditor(QWidget):
    """Where one method's imposed curve comes from: a kind and the fields of that kind."""
    changed = Signal()

    def __init__(self, repo: str | None, method: str):
        super().__init__()
        self.kind = ComboBox()
        for kind, (label, tip) in SOURCES.items():
            self.kind.addItem(label, kind)
            self.kind.setItemData(self.kind.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.rates = QLineEdit("0.8, 0.6, 0.45, 0.34, 0.26")
        self.rates.setToolTip(SOURCES["typed"][1])
        block = method in whatif.BLOCK_DRAFTERS
        self.p1 = _rate_box(0.85 if block else 0.8, "p1: the chance that the first drafted token is accepted")
        self.decay = _rate_box(0.85 if block else 0.75, SOURCES["decay"][1])
        self.mal = DoubleSpinBox(minimum=1.0, maximum=16.0, singleStep=0.1, decimals=2, value=2.5)
        self.mal.setToolTip(SOURCES["mal"][1])
        self.published = ComboBox()
        for key in curves.keys():
            self.published.addItem(key, key)
        self.published.setToolTip(SOURCES["published"][1])
        self.run_id = SpinBox(minimum=1, maximum=1_000_000_000)
        self.run_id.setPrefix("run ")
        self.run_id.setToolTip(SOURCES["measured"][1])
        decay = QWidget()
        dl = QHBoxLayout(decay)
        dl.setContentsMargins(0, 0, 0, 0)
        for text, box in (("p1", self.p1), ("decay", self.decay)):
            dl.addWidget(QLabel(text))
            dl.addWidget(box)
        self.fields = QStackedWidget()
        for w in (self.rates, decay, self.mal, self.published, self.run_id):
            self.fields.addWidget(w)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.kind)
        layout.addWidget(self.fields, 1)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.rates.textChanged.connect(self.changed)
        for box in (self.p1, self.decay, self.mal):
            box.valueChanged.connect(self.changed)
        self.published.currentIndexChanged.connect(self.changed)
        self.run_id.valueChanged.connect(self.changed)
        # A publication measured this target with this method: its curve is the first guess.
        measured = curves.for_target(repo, method) if repo else []
        if measured:
            self.published.setCurrentIndex(self.published.findData(measured[0].key))
        self.set_kind("published" if measured else "decay")

    def set_kind(self, kind: str) -> None:
        self.kind.setCurrentIndex(self.kind.findData(kind))
        self._kind_changed()

    def _kind_changed(self) -> None:
        self.fields.setCurrentIndex(max(0, self.kind.currentIndex()))
        self.kind.setToolTip(SOURCES[self.kind.currentData()][1])
        self.changed.emit()

    def value(self, where: str) -> list[float] | dict[str, Any] | Measured:
        """The plan's `acceptance =` value (a Measured marker for a run's curve)."""
        kind = self.kind.currentData()
        if kind == "typed":
            try:
                rates = [float(v) for v in self.rates.text().replace(";", ",").split(",") if v.strip()]
            except ValueError:
                raise plan.PlanError(f"{where}: write rates between 0 and 1 separated by commas, "
                                     "e.g. 0.8, 0.6, 0.45") from None
            return rates
        if kind == "decay":
            return {"p1": round(self.p1.value(), 4), "decay": round(self.decay.value(), 4)}
        if kind == "mal":
            return {"mal": round(self.mal.value(), 4)}
        if kind == "published":
            if self.published.currentData() is None:
                raise plan.PlanError(f"{where}: no published curve is shipped")
            return {"published": self.published.currentData()}
        return Measured(self.run_id.value())


class MethodRow(QWidget):
    removed = Signal(object)
    changed = Signal()

    def __init__(self, repo: str | None, method: str, draft: str | None):
        super().__init__()
        self.number = QLabel()
        self.method = ComboBox()
        for name in whatif.METHODS:
            self.method.addItem(methods.METHODS[name].label, name)
            self.method.setItemData(self.method.count() - 1, methods.METHODS[name].doc, Qt.ItemDataRole.ToolTipRole)
        self.method.setCurrentIndex(max(0, self.method.findData(method)))
        self.draft = QLineEdit(draft or "")
        self.draft.setPlaceholderText("shape:NAME, a folder or a Hub repo id (blank: native MTP)")
        self.draft.setToolTip("The draft, served from its config alone (it inherits the target's dummy weights)")
        self.n = QLineEdit(", ".join(map(str, whatif.default_ns(method))))
        self.n.setToolTip("Numbers of speculative tokens per step; one server per value")
        self.source = SourceEditor(repo, method)
        remove = QPushButton("Remove")
        remove.setAutoDefault(False)  # Enter is OK, never a row's removal
        remove.clicked.connect(lambda: self.removed.emit(self))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.number)
        layout.addWidget(self.method, 2)
        layout.addWidget(self.draft, 3)
        layout.addWidget(self.n, 1)
        layout.addWidget(self.source, 4)
        layout.addWidget(remove)
        for w in (self.draft, self.n):
            w.textChanged.connect(self.changed)
        self.method.currentIndexChanged.connect(self._method_changed)
        self.source.changed.connect(self.changed)
        self._shown = method

    def _method_changed(self) -> None:
        # N values the user left at a method's defaults follow the method chosen (a block drafter's differ).
        if parse_ints_or_none(self.n.text()) == whatif.default_ns(self._shown):
            self.n.setText(", ".join(map(str, whatif.default_ns(self.method.currentData()))))
        self._shown = self.method.currentData()
        self.changed.emit()

    def spec(self, i: int) -> Entry:
        where = f"methods #{i}"
        return (self.method.currentData(), self.draft.text().strip() or None,
                parse_ints(self.n.text(), f"{where} N values"), self.source.value(f"{where} acceptance"))


def parse_ints_or_none(text: str) -> list[int] | None:
    try:
        return parse_ints(text, "N")
    except plan.PlanError:
        return None


def build(target: str, entries: list[Entry], db_path: Path | None, base: Path,
          **workload: Any) -> tuple[str, plan.Plan]:
    """The plan's text and what `workbench.plan` makes of it (off the GUI thread: a shape is
    materialised on first use, a measured curve read from the database)."""
    resolved: list[Entry] = []
    for method, draft, ns, accepted in entries:
        if isinstance(accepted, Measured):
            if db_path is None:
                raise whatif.WhatIfError("no results database is open to read a measured run from")
            accepted = whatif.measured_curve(db_path, accepted.run_id)
        resolved.append((method, draft, ns, accepted))
    text = whatif.plan_text(target, resolved, **workload)
    return text, plan.loads(text, path=str(base / "what-if.toml"), base=base)


class WhatIfDialog(QDialog):
    planned = Signal(object, dict)  # the plan file written, its document

    def __init__(self, target: str, label: str, repo: str | None, db_path: Path | None, folder: Path,
                 parent: QWidget | None = None, vllm: VllmInstall | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"What-if: {label}")
        self.target, self.label, self.repo, self.db_path, self.folder = target, label, repo, db_path, folder
        self.vllm = vllm  # the vLLM that would serve it here; None while not yet probed
        self.rows: list[MethodRow] = []
        self.written: Path | None = None
        self.name = f"what-if-{label.replace('/', '-')}"
        # Checks wait for a pause in typing: each builds the plan on a thread of its own.
        self.timer = QTimer(self, singleShot=True, interval=300)
        self.timer.timeout.connect(self.check)
        self._checks = itertools.count(1)
        self._pending: tuple[int, bool] | None = None  # the check whose answer counts, and whether it writes
        self.rows_box = QVBoxLayout()
        add = QPushButton("Add method")
        add.setAutoDefault(False)
        add.clicked.connect(lambda: self.add_row("eagle3", None))
        self.concurrency = QLineEdit(", ".join(map(str, whatif.DEFAULT_CONCURRENCY)))
        self.concurrency.setToolTip("Requests in flight at once; every configuration runs at each")
        self.max_tokens = SpinBox(minimum=1, maximum=100_000, value=256)
        self.max_tokens.setToolTip("Output tokens per request (EOS ignored: every answer runs to this length)")
        self.prompts = SpinBox(minimum=1, maximum=100_000, value=64)
        self.prompts.setToolTip("Prompts per run at every concurrency: at least the highest concurrency fills "
                                "every slot; more gives several waves")
        self.message = QLabel(wordWrap=True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText("Write plan and open it")
        self.ok.setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        note = QLabel(f"Target <b>{html.escape(label)}</b>, served from its config alone (dummy weights): "
                      "each method is told what to accept, so the run measures what drafting costs at that "
                      "acceptance.", wordWrap=True)
        note.setToolTip(RATE_TIP)
        header = QLabel("#  method · draft · N values · acceptance source")
        header.setToolTip(RATE_TIP)
        form = QFormLayout()
        form.addRow("Concurrency", self.concurrency)
        form.addRow("Max tokens", self.max_tokens)
        form.addRow("Prompts per run", self.prompts)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addWidget(header)
        layout.addLayout(self.rows_box)
        layout.addWidget(add, alignment=Qt.AlignmentFlag.AlignLeft)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self.resize(1100, 360)

        shipped = whatif.drafts_for(target if target.startswith(SHAPE_PREFIX) else (repo or ""))
        for method, draft in shipped or [("eagle3", None)]:
            self.add_row(method, draft)
        self.concurrency.textChanged.connect(self.timer.start)
        for box in (self.max_tokens, self.prompts):
            box.valueChanged.connect(self.timer.start)
        self.check()

    def add_row(self, method: str, draft: str | None) -> MethodRow:
        row = MethodRow(self.repo, method, draft)
        row.removed.connect(self.remove_row)
        row.changed.connect(self.timer.start)
        self.rows.append(row)
        self.rows_box.addWidget(row)
        self._renumber()
        return row

    def remove_row(self, row: MethodRow) -> None:
        self.rows.remove(row)
        row.setParent(None)
        row.deleteLater()
        self._renumber()

    def _renumber(self) -> None:
        for i, row in enumerate(self.rows, 1):
            row.number.setText(f"#{i}")
        self.timer.start()

    def _spec(self) -> dict[str, Any]:
        """The form as plain values (read here, on the GUI thread); PlanError for what it cannot say."""
        if not self.rows:
            raise plan.PlanError("add at least one method: a what-if sweep compares drafting against the baseline")
        concurrency = parse_ints(self.concurrency.text(), "concurrency")
        max_tokens = self.max_tokens.value()
        return {"target": self.target, "entries": [row.spec(i) for i, row in enumerate(self.rows, 1)],
                "db_path": self.db_path, "base": self.folder, "concurrency": concurrency, "max_tokens": max_tokens,
                "num_prompts": self.prompts.value(), "name": self.name,
                # Room for the longest built-in prompt next to the answer.
                "max_model_len": max(2048, max_tokens + 1024)}

    def check(self, write: bool = False) -> None:
        """Builds and validates the plan off the GUI thread; the answer shows in one line (and, for
        OK, the plan is written and handed over)."""
        self.timer.stop()
        try:
            spec = self._spec()
        except plan.PlanError as exc:
            self._pending = None
            self._say(str(exc), error=True)
            return
        key = (next(self._checks), write)
        self._pending = key
        self._say("checking…" if not write else "checking and writing…")
        worker.run(lambda: build(**spec), self, lambda built: self._built(key, built),
                   lambda exc: self._failed(key, exc))

    def busy(self) -> bool:
        """A check waits for a pause in typing, or is in flight: the message is not yet the form's."""
        return self.timer.isActive() or self._pending is not None

    def accept(self) -> None:
        self.check(write=True)

    def _failed(self, key: tuple[int, bool], exc: BaseException) -> None:
        if key == self._pending:
            self._pending = None
            known = isinstance(exc, (plan.PlanError, whatif.WhatIfError))
            text = str(exc) if known else f"{type(exc).__name__}: {exc}"
            self._say(text.strip().splitlines()[0] if text.strip() else type(exc).__name__, error=True)

    def _built(self, key: tuple[int, bool], built: tuple[str, plan.Plan]) -> None:
        if key != self._pending:
            return  # the form changed since: a newer check answers
        self._pending = None
        text, p = built
        runs = f"{len(p.runs)} runs on {len(p.servers())} servers (the baseline included)"
        refused = findings.what_if_refusal(p, self.vllm) if self.vllm is not None else None
        if refused:
            # Red, as Run will refuse it here; OK still writes it, for a host whose vLLM can run it.
            self._say(f"✖ {runs} planned, but not runnable here: {refused}", error=True, writable=True)
        else:
            self._say(f"✔ {runs}, dummy weights, acceptance imposed")
        if not key[1]:
            return
        try:
            path = whatif.write_new(self.folder, self.name, text)
        except whatif.WhatIfError as exc:
            self._say(str(exc), error=True)
            return
        self.written = path
        self.planned.emit(path, tomllib.loads(text))
        super().accept()

    def _say(self, text: str, error: bool = False, writable: bool = False) -> None:
        self.message.setStyleSheet(f"color: {RED}" if error else "")
        self.message.setText(text)
        self.ok.setEnabled(not error or writable)
        self.ok.setToolTip(WRITE_ELSEWHERE_TIP if writable else "")


# --- what the Experiment form keeps of a what-if plan ---------------------------------------------
