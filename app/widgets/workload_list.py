"""The Experiment page's prompt sets: the built-in families, the benchmark datasets, random words
and any prompt file a plan names or the user adds, each checked or not."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QListWidget, QListWidgetItem, QWidget

from workbench.usecases import workload_names


class WorkloadList(QListWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip("Prompt sets; each is run at every concurrency")
        for name, label in [(workload_names.BUILTIN, "built-in: all four families")] + \
                [(f"{workload_names.BUILTIN}:{k}", f"built-in: {v}") for k, v in workload_names.FAMILIES.items()] + \
                [(d.name, f"{d.name}: {d.repo} (Hugging Face Hub, cached once)") for d in workload_names.DATASETS.values()] + \
                [(workload_names.RANDOM, "random words (no task: a stress test, not a benchmark)")]:
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.addItem(item)
        self.setMaximumHeight(190)

    def add_file(self, path: str | None = None) -> None:
        """A prompt file, checked (asked for when not given)."""
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Prompt file", "", "Prompts (*.jsonl *.parquet)")
        if path:
            item = QListWidgetItem(Path(path).name)
            item.setData(Qt.ItemDataRole.UserRole, path)
            item.setToolTip(path)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.addItem(item)

    def set_names(self, names: list[str]) -> None:
        """Exactly `names` checked; a name not listed yet is added as a prompt file."""
        known = {self.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.count())}
        for name in names:
            if name not in known:
                self.add_file(name)
        for i in range(self.count()):
            item = self.item(i)
            checked = item.data(Qt.ItemDataRole.UserRole) in names
            item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)

    def names(self) -> list[str]:
        return [self.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.count())
                if self.item(i).checkState() == Qt.CheckState.Checked]
