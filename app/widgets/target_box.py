"""The Experiment page's Target group: the experiment's name, the model served and how (its
fields made from the plan schema, `app.widgets.plan_fields`)."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QWidget

from app.widgets.long_value import LongValueEdit
from app.widgets.plan_fields import KeyField, KeysBox, field
from workbench.plan import schema

DTYPES = ["auto", "bfloat16", "float16", "float32"]


class TargetBox(KeysBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Target", ("", "target"), parent)
        self.name = QLineEdit()
        model = schema.key("target.model")
        self.target = LongValueEdit()
        self.target.setToolTip(model.help)
        browse = QPushButton("…")
        browse.setFixedWidth(28)
        browse.clicked.connect(self._browse_target)
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.target)
        layout.addWidget(browse)
        dtype = schema.key("target.dtype")
        self.dtype = QComboBox()
        self.dtype.addItems(DTYPES)
        self.dtype.setToolTip(dtype.help)
        served = field(schema.key("target.served_name"))
        max_len = field(schema.key("target.max_model_len"), singleStep=1024)
        eager = field(schema.key("target.enforce_eager"))
        self.place([
            ("Name", self.name),
            (model.label or "", KeyField(model, row, lambda: self.target.text().strip(),
                                         lambda v: self.target.setText(str(v or "")), self.target.textChanged)),
            (served.key.label or "", served), (max_len.key.label or "", max_len),
            (dtype.label or "", KeyField(dtype, self.dtype, self.dtype.currentText,
                                         lambda v: self.dtype.setCurrentText(str(v)), self.dtype.currentIndexChanged)),
            ("", eager)], skip=("name",))
        self.name.textChanged.connect(lambda *_: self.changed.emit())
        self.served_name = served.widget
        self.max_model_len = max_len.widget
        self.enforce_eager = eager.widget

    def _browse_target(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Target model folder")
        if folder:
            self.target.setText(folder)
