"""What the Train page shows of a run: its steps (state and figures) and its charts (the loss
curve, the validation accuracy by draft position)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from app.widgets import chart_export, theme
from workbench.usecases import training

STEP_TITLES = {
    "prompts": "Choose prompts",
    "responses": "Generate responses with the target",
    "prepare": "Tokenize (speculators prepare-data)",
    "hidden_states": "Extract the target's hidden states",
    "train": "Train the draft",
    "checkpoint": "Write the checkpoint",
    "register": "Register the draft/target pair",
}


class StepList(QTreeWidget):
    """One row per pipeline step: its title, its state (pending, running, done, ...) and a detail."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setHeaderLabels(["Step", "State", "Detail"])
        self.items: dict[str, QTreeWidgetItem] = {}
        for key in training.STEPS:
            item = QTreeWidgetItem([STEP_TITLES[key], "pending", ""])
            self.addTopLevelItem(item)
            self.items[key] = item
        self.setColumnWidth(0, 250)
        self.setColumnWidth(1, 110)
        self.setMaximumHeight(190)

    def set(self, step: str, state: str | None = None, detail: str | None = None) -> None:
        item = self.items[step]
        if state is not None:
            item.setText(1, state)
        if detail is not None:
            item.setText(2, detail)

    def show_done(self, done: dict[str, Any]) -> None:
        """The steps a folder's manifest records as finished (or reused); the rest pending."""
        for key in self.items:
            info = done.get(key)
            self.set(key, ("reused" if info.get("reused_from") else "done") if info else "pending",
                     detail(key, info) if info else "")


class TrainCharts(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loss_plot = theme.plot("Training loss", "loss", "training step (in the order run)",
                                    "Loss of each training step, and the validation loss after each epoch. "
                                    "A validation loss that rises while the training loss falls means "
                                    "overfitting. Steps redone after a resume are drawn again.")
        self.loss_plot.addLegend(offset=(-10, 10))
        self.train_curve = self.loss_plot.plot([], [], name="train", pen=pg.mkPen(theme.color(0), width=2))
        self.val_curve = self.loss_plot.plot([], [], name="validation (per epoch)", pen=pg.mkPen(theme.color(1), width=2),
                                             symbol="o", symbolSize=7, symbolBrush=theme.color(1))
        self.acc_plot = theme.plot("Validation accuracy by draft position", "accuracy (share of tokens)",
                                   "draft position k",
                                   "How often the draft's k-th token equals the target's on held-out data, after "
                                   "the latest epoch. Acceptance in serving falls off with k the same way: "
                                   "useful N stops where it gets low.")
        theme.integer_ticks(self.acc_plot)
        self.acc_plot.getAxis("left").enableAutoSIPrefix(False)
        self.acc_plot.setYRange(0, 1)
        self._drawn_val: dict[str, Any] | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.loss_plot, 3)
        layout.addWidget(self.acc_plot, 2)

    def draw(self, c: training.LossCurve) -> None:
        self.train_curve.setData(list(range(1, len(c.train_loss) + 1)), c.train_loss)
        self.val_curve.setData(c.val_step, c.val_loss)
        if c.last_val is self._drawn_val:
            return  # the accuracy bars change only with a validation
        self._drawn_val = last = c.last_val
        self.acc_plot.clear()
        acc = training.position_accuracy(last) if last else []
        if last and acc:
            self.acc_plot.addItem(pg.BarGraphItem(x=list(range(1, len(acc) + 1)), height=acc, width=0.7,
                                                  brush=theme.color(2)))
            title = "Validation accuracy by draft position"
            eal = last.get("eal_epoch")
            if isinstance(eal, (int, float)):
                title += f" (expected accepted length {eal:.2f})"
            self.acc_plot.setTitle(title)

    def export_to(self, base: Path) -> list[Path]:
        """The loss chart as BASE and the accuracy chart as BASE-accuracy, same format; raises
        OSError or ValueError."""
        written = [base, base.with_name(base.stem + "-accuracy" + base.suffix)]
        chart_export.export(self.loss_plot, written[0])
        chart_export.export(self.acc_plot, written[1])
        return written


def detail(step: str, info: dict[str, Any]) -> str:
    secs = f" in {info['seconds']:.0f} s" if isinstance(info.get("seconds"), (int, float)) else ""
    if step == "prompts":
        return f"{info.get('prompts')} prompts{secs}"
    if step == "responses":
        return f"{info.get('responses')} responses, {info.get('completion_tokens')} answer tokens{secs}"
    if step == "prepare":
        return f"{info.get('samples')} samples, {info.get('tokens')} tokens{secs}"
    if step == "hidden_states":
        return f"{info.get('files')} files ({info.get('reused', 0)} reused), layers {info.get('layer_ids')}{secs}"
    if step == "train":
        val = info.get("val_loss")
        return f"{info.get('steps')} steps" + (f", validation loss {val:.3f}" if isinstance(val, float) else "") + secs
    if step == "checkpoint":
        return str(info.get("path", ""))
    if step == "register":
        return f"pair {info.get('pair')}"
    return ""
