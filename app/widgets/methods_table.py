"""The Experiment page's drafting methods: one row per method (its draft, N values and options),
and the form's parsers for comma-separated numbers and key=value options."""

from __future__ import annotations

import copy
import tomllib
from typing import Any

import tomli_w
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget,
)

from app.widgets.long_value import LongValueEdit
from workbench import methods, plan

METHOD_CHOICES = [m for m in methods.METHODS if m != "baseline"]


def parse_ints(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(";", ",").split(",") if v.strip()]
    except ValueError:
        raise plan.PlanError(f"{what}: write whole numbers separated by commas, e.g. 1, 2, 4") from None
    if not values:
        raise plan.PlanError(f"{what} is empty")
    return values


def parse_options(text: str, what: str) -> dict[str, Any]:
    """`key=value, key=value` (values as TOML: numbers, true/false, "strings")."""
    if not text.strip():
        return {}
    try:
        return tomllib.loads("\n".join(part.strip() for part in text.split(",") if part.strip()))
    except tomllib.TOMLDecodeError:
        raise plan.PlanError(f"{what}: write options as key=value, separated by commas") from None


def format_options(options: dict[str, Any]) -> str:
    return ", ".join(tomli_w.dumps({k: v}).strip() for k, v in options.items())


class MethodRow(QWidget):
    removed = Signal(object)
    changed = Signal()

    def __init__(self, entry: dict[str, Any] | None = None, unavailable: dict[str, str] | None = None):
        super().__init__()
        entry = entry or {"method": "ngram", "n": [1, 2, 3]}
        # The plan's own entry: the page writes back what the row changed over it (form_keep).
        self.source = copy.deepcopy(entry)
        self.method = QComboBox()
        for name in METHOD_CHOICES:
            self.method.addItem(methods.METHODS[name].label, name)
            self.method.setItemData(self.method.count() - 1, methods.METHODS[name].doc, Qt.ItemDataRole.ToolTipRole)
        self.method.setCurrentIndex(max(0, self.method.findData(methods.get(entry["method"]).name)))
        self.set_unavailable(unavailable or {})
        self.draft = LongValueEdit(entry.get("draft", ""))
        self.draft.setPlaceholderText("draft folder, Hub repo id or demo:NAME")
        self.browse = browse = QPushButton("…")
        browse.setToolTip("Choose a draft model folder")
        browse.setFixedWidth(28)
        browse.clicked.connect(self._browse)
        ns = entry.get("n", [])
        self.n = QLineEdit(", ".join(str(v) for v in (ns if isinstance(ns, list) else [ns])))
        self.n.setPlaceholderText("N values, e.g. 1, 2, 3")
        self.n.setToolTip("Numbers of speculative tokens per step (num_speculative_tokens); one run per value")
        self.options = LongValueEdit(format_options(entry.get("options", {})))
        self.options.setPlaceholderText("options, e.g. prompt_lookup_max=4")
        self.optional = entry.get("optional", False)
        self.remove_button = remove = QPushButton("Remove")
        remove.clicked.connect(lambda: self.removed.emit(self))
        # Two lines a method: on one, a draft checkpoint's name (often 30-50 characters) and an
        # option list both left a field too narrow to read at a 1280-pixel window.
        self.n.setMinimumWidth(90)
        self.draft.setMinimumWidth(160)
        self.options.setMinimumWidth(160)
        top = QHBoxLayout()
        top.addWidget(self.method, 2)
        top.addWidget(self.draft, 5)
        top.addWidget(browse)
        top.addWidget(remove)
        bottom = QHBoxLayout()
        bottom.addWidget(QLabel("N"))
        bottom.addWidget(self.n, 2)
        bottom.addWidget(QLabel("options"))
        bottom.addWidget(self.options, 5)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 6)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addLayout(bottom)
        for w in (self.draft, self.n, self.options):
            w.textChanged.connect(self.changed)
        self.method.currentIndexChanged.connect(self._method_changed)
        self._method_changed()
        try:
            self.shown: dict[str, Any] | None = self.entry(0)
        except plan.PlanError:
            self.shown = None  # an entry the row cannot show whole: every field is written back

    def tab_order(self) -> list[QWidget]:
        """The row's fields as they read: its first line, then its second."""
        return [self.method, self.draft, self.browse, self.remove_button, self.n, self.options]

    def set_unavailable(self, reasons: dict[str, str]) -> None:
        """Methods the vLLM environment cannot run: greyed out in the list, with the reason and the
        command that installs what they need (a plan that names one still shows it, and preflight says why)."""
        items = self.method.model()
        assert isinstance(items, QStandardItemModel), "a combo box's own model is a QStandardItemModel"
        for i, name in enumerate(METHOD_CHOICES):
            spec = methods.METHODS[name]
            item = items.item(i)
            reason = reasons.get(name)
            item.setText(f"{spec.label} (unavailable)" if reason else spec.label)
            item.setToolTip(f"Unavailable: {reason}" if reason else spec.doc)
            item.setEnabled(reason is None)

    def _method_changed(self) -> None:
        spec = methods.METHODS[self.method.currentData()]
        self.draft.setEnabled(spec.draft != "none")
        self.draft.setToolTip({"required": "This method needs a draft checkpoint",
                               "optional": "Optional: a separate draft checkpoint (e.g. a Gemma 4 assistant)",
                               "none": "This method uses no draft weights"}[spec.draft])
        self.changed.emit()

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Draft model folder")
        if folder:
            self.draft.setText(folder)

    def entry(self, i: int) -> dict[str, Any]:
        what = f"method #{i}"
        out: dict[str, Any] = {"method": self.method.currentData(), "n": parse_ints(self.n.text(), f"{what} N values")}
        if self.draft.isEnabled() and self.draft.text().strip():
            out["draft"] = self.draft.text().strip()
        options = parse_options(self.options.text(), f"{what} options")
        if options:
            out["options"] = options
        if self.optional:
            out["optional"] = True
        return out


class MethodsTable(QGroupBox):
    """The rows of drafting methods; `changed` on any edit, addition or removal."""
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Drafting methods (a no-speculation baseline is always added)", parent)
        self.rows: list[MethodRow] = []
        self.unavailable: dict[str, str] = {}
        self.box = QVBoxLayout()
        self.add_button = QPushButton("Add method")
        self.add_button.clicked.connect(lambda: self.add({"method": "ngram", "n": [2]}))
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("each: method · draft checkpoint, then N values · options"))
        layout.addLayout(self.box)
        layout.addWidget(self.add_button, alignment=Qt.AlignmentFlag.AlignLeft)

    def add(self, entry: dict[str, Any]) -> None:
        row = MethodRow(entry, self.unavailable)
        row.removed.connect(self.remove)
        row.changed.connect(self.changed)
        self.rows.append(row)
        self.box.addWidget(row)
        # A widget joins the end of its window's focus chain, after the page's Run button: Tab
        # would reach a row only after Run. Its fields go just before Add method, as they read,
        # after the focusable widget before it (Qt orders nothing after a widget without focus).
        before = self.add_button.previousInFocusChain()
        while before is not None and before.focusPolicy() == Qt.FocusPolicy.NoFocus and before is not self.add_button:
            before = before.previousInFocusChain()
        assert before is not None, "a window's focus chain is a ring: every widget has one before it"
        for field in row.tab_order():
            QWidget.setTabOrder(before, field)
            before = field
        QWidget.setTabOrder(before, self.add_button)
        self.changed.emit()

    def set_available(self, modules: set[str], python: str) -> None:
        """What the probed vLLM environment has: each row's list marks the methods it cannot run."""
        self.unavailable = {name: why for name in METHOD_CHOICES if (why := methods.unavailable(name, modules, python))}
        for row in self.rows:
            row.set_unavailable(self.unavailable)

    def remove(self, row: MethodRow) -> None:
        self.rows.remove(row)
        row.setParent(None)
        row.deleteLater()
        self.changed.emit()

    def set_entries(self, entries: list[dict[str, Any]]) -> None:
        """The plan's methods; its baseline entry is not a row (the baseline is always run)."""
        for row in list(self.rows):
            self.remove(row)
        for entry in entries:
            if entry.get("method") != "baseline":
                self.add(entry)

    def entries(self) -> list[dict[str, Any]]:
        return [row.entry(i) for i, row in enumerate(self.rows, 1)]
