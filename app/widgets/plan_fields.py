"""The Experiment form's fields of plan keys, made from the keys' declarations
(`workbench.plan.schema`): a field shows its key's value, or the key's default where the plan
leaves it out, and says what it holds now as the document's value (None: no key).

Most fields are made here from the key's kind alone (a spin box over its range, a check box, a
line of text), with its label and its help as the tooltip; a box places the few that need more
(a list of prompt sets, repeats that may be "auto") among them. A key the schema gives a form
label and no box places is added at the end of its table's box, so a key declared with a label
shows on the form with no change here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Signal, SignalInstance
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QLineEdit, QSpinBox, QWidget)

from workbench.plan import PlanError, kinds, schema


@dataclass
class KeyField:
    key: schema.Key
    widget: QWidget
    get: Callable[[], object]  # the document's value now; may raise PlanError on text that makes none
    put: Callable[[Any], None]  # shows a value as the plan document holds it (any TOML value)
    signal: SignalInstance  # the widget's signal of a change

    def show(self, doc: dict[str, Any]) -> None:
        table = doc.get(self.key.table, {}) if self.key.table else doc
        self.put(table.get(self.key.name, self.key.default) if isinstance(table, dict) else self.key.default)


def field(key: schema.Key, **hints: object) -> KeyField:
    """A field for `key` made from its kind; `hints` are the widget's own settings (a step, a
    bound narrower than the key's where the box cannot show the key's own)."""
    kind = key.kind
    if isinstance(kind, kinds.Flag):
        box = QCheckBox(key.label or key.name)
        made = KeyField(key, box, box.isChecked, lambda v: box.setChecked(bool(v)), box.toggled)
    elif isinstance(kind, kinds.Number):
        spin = QDoubleSpinBox(minimum=kind.lo, maximum=kind.hi, decimals=2)
        made = KeyField(key, spin, lambda: round(spin.value(), 4), lambda v: spin.setValue(float(v)),
                        spin.valueChanged)
    elif isinstance(kind, kinds.Whole):
        whole = QSpinBox(minimum=int(kind.lo), maximum=int(kind.hi))
        made = KeyField(key, whole, whole.value, lambda v: whole.setValue(int(v)), whole.valueChanged)
    elif isinstance(kind, kinds.Choice):
        combo = QComboBox()
        combo.addItems(list(kind.values))
        made = KeyField(key, combo, combo.currentText, lambda v: combo.setCurrentText(str(v)),
                        combo.currentIndexChanged)
    else:  # text, and any kind the form has no better field for, as its text
        line = QLineEdit()
        made = KeyField(key, line, lambda: line.text().strip() or None,
                        lambda v: line.setText("" if v is None else str(v)), line.textChanged)
    for name, value in hints.items():
        getattr(made.widget, "set" + name[0].upper() + name[1:])(value)
    made.widget.setToolTip(key.help)
    return made


class KeysBox(QGroupBox):
    """A group of the form: the fields it is given, in its order, then a field made from its kind
    for every other key of its tables that the schema labels for the form."""
    changed = Signal()

    def __init__(self, title: str, tables: tuple[str, ...], parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self.tables = tables
        self.form = QFormLayout(self)
        self.fields: list[KeyField] = []

    def place(self, placed: list[tuple[str, KeyField | QWidget]], skip: tuple[str, ...] = ()) -> None:
        """The rows given, then a made field for each other labelled key (none of those in `skip`)."""
        for label, item in placed:
            self._add(label, item)
        taken = {f.key.dotted for f in self.fields} | set(skip)
        for key in schema.keys():
            if key.table in self.tables and key.label and key.dotted not in taken:
                self._add("" if isinstance(key.kind, kinds.Flag) else key.label, field(key))
        self.setVisible(self.form.rowCount() > 0)

    def _add(self, label: str, item: KeyField | QWidget) -> None:
        if isinstance(item, KeyField):
            self.fields.append(item)
            item.signal.connect(lambda *_: self.changed.emit())
            item = item.widget
        self.form.addRow(label, item)

    def show_document(self, doc: dict[str, Any]) -> None:
        for f in self.fields:
            f.show(doc)

    def values(self, strict: bool = True) -> dict[tuple[str, ...], object]:
        """Each field's value at its key's path. Not strict: a field whose text makes no value is
        left out (the document is then written from it)."""
        out: dict[tuple[str, ...], object] = {}
        for f in self.fields:
            try:
                out[f.key.path] = f.get()
            except PlanError:
                if strict:
                    raise
        return out

    def field(self, dotted: str) -> KeyField:
        return next(f for f in self.fields if f.key.dotted == dotted)
