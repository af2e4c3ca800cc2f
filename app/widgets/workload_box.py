"""The Experiment page's Workload group: what each run sends and how often, and whether N is
chosen by prediction; its fields made from the plan schema (`app.widgets.plan_fields`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtWidgets import QCheckBox, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget

from app.widgets.methods_table import parse_ints
from app.widgets.plan_fields import KeyField, KeysBox, field
from app.widgets.workload_list import WorkloadList
from workbench.plan import schema


def _listed(value: object) -> list[Any]:
    return value if isinstance(value, list) else [value]


class WorkloadBox(KeysBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Workload", ("workload",), parent)
        self.workloads = WorkloadList()
        add_file = QPushButton("Add prompt file…")
        add_file.clicked.connect(lambda: self.workloads.add_file())
        sets = QWidget()
        sets_layout = QVBoxLayout(sets)
        sets_layout.setContentsMargins(0, 0, 0, 0)
        sets_layout.addWidget(self.workloads)
        sets_layout.addWidget(add_file, alignment=Qt.AlignmentFlag.AlignLeft)
        self.concurrency = QLineEdit()
        self.concurrency.setToolTip(schema.key("workload.concurrency").help)
        # 0 reads "auto": repeats = "auto" in the plan (workbench.analysis.repeats).
        self.repeats = QSpinBox(minimum=0, maximum=100)
        self.repeats.setSpecialValueText("auto")
        self.repeats.setToolTip(schema.key("workload.repeats").help)
        self.num_prompts = QSpinBox(minimum=1, maximum=100000)
        self.num_prompts.setToolTip(schema.key("workload.num_prompts").help)
        max_tokens = field(schema.key("workload.max_tokens"))
        warmup = field(schema.key("workload.warmup"))
        temperature = field(schema.key("workload.temperature"), singleStep=0.1)
        # Two decimals cannot show the key's own lower bound (0.0001).
        top_p = field(schema.key("workload.top_p"), minimum=0.01, singleStep=0.05)
        ignore_eos = field(schema.key("workload.ignore_eos"))
        self.adaptive = QCheckBox("adaptive N (predict the best N instead of running every N)")
        self.adaptive.setToolTip("Runs the baseline, the largest and the smallest N, predicts speedup for every N, "
                                 "then runs only the predicted best (and a close rival); see docs/recommend-n.md")

        def keyed(dotted: str, widget: QWidget, get: Callable[[], object], put: Callable[[Any], None],
                  signal: SignalInstance) -> tuple[str, KeyField]:
            key = schema.key(dotted)
            return key.label or "", KeyField(key, widget, get, put, signal)

        self.place([
            keyed("workload.names", sets, self.workloads.names,
                  lambda v: self.workloads.set_names(_listed(v)), self.workloads.itemChanged),
            keyed("workload.concurrency", self.concurrency, lambda: parse_ints(self.concurrency.text(), "concurrency"),
                  lambda v: self.concurrency.setText(", ".join(str(c) for c in _listed(v))),
                  self.concurrency.textChanged),
            # {per_concurrency, min}: the spin box shows the least count; the table is kept unless changed.
            keyed("workload.num_prompts", self.num_prompts, self.num_prompts.value,
                  lambda v: self.num_prompts.setValue(int(v.get("min", 1) if isinstance(v, dict) else v)),
                  self.num_prompts.valueChanged),
            (max_tokens.key.label or "", max_tokens), (warmup.key.label or "", warmup),
            keyed("workload.repeats", self.repeats, lambda: self.repeats.value() or "auto",
                  lambda v: self.repeats.setValue(0 if v == "auto" else int(v)), self.repeats.valueChanged),
            (temperature.key.label or "", temperature), (top_p.key.label or "", top_p), ("", ignore_eos),
            ("", KeyField(schema.key("sweep.mode"), self.adaptive, lambda: "adaptive" if self.adaptive.isChecked() else None,
                          lambda v: self.adaptive.setChecked(v == "adaptive"), self.adaptive.toggled))])
        self.max_tokens = max_tokens.widget
        self.warmup = warmup.widget
        self.temperature = temperature.widget
        self.top_p = top_p.widget
        self.ignore_eos = ignore_eos.widget
