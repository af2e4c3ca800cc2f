"""The Train page's form: what to train (target, method, prompts, sizes) and where, as the
options of `draftbench train`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QMessageBox, QPushButton, QSpinBox, QWidget)

from app.widgets.long_value import LongValueEdit
from workbench import paths
from workbench.usecases import demo_model, training

WORKLOADS = [training.SELF_PROMPTS, "builtin", "gsm8k", "math500", "humaneval", "mbpp"]
METHODS = [("EAGLE-3", "eagle3"), ("DFlash", "dflash")]


def default_out(name: str) -> Path:
    return paths.data_dir() / "training" / name


class TrainForm(QGroupBox):
    """Emits `folder_changed` when the output folder was changed (typed, browsed or suggested)."""

    folder_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Training run", parent)
        self.target = QComboBox(editable=True)
        self.target.addItems([f"demo:{m.name}" for m in demo_model.ALL if m.role == "target"] or ["demo:smollm2-135m"])
        self.target.setToolTip("The model the draft will serve: a local model folder or demo:NAME. Its own "
                               "greedy answers are the training data, so the draft learns this target's habits.")
        browse_target = QPushButton("Folder…")
        browse_target.clicked.connect(self._browse_target)
        self.method = QComboBox()
        for title, key in METHODS:
            self.method.addItem(title, key)
        self.method.setToolTip("EAGLE-3 drafts one token at a time from three of the target's hidden layers; "
                               "DFlash drafts a whole block in one pass (N up to block size - 1).")
        self.prompts = QComboBox(editable=True)
        self.prompts.addItems(WORKLOADS)
        self.prompts.setToolTip("\"self\": prompts written by the target itself from its chat template "
                                "(works for any chat model, and leaves Draftbench's workloads unseen, so the "
                                "evaluation sweep is on held-out prompts). Or a Draftbench workload (the task "
                                "sets need the Hugging Face cache) or a prompt file (.jsonl or .txt): train on "
                                "prompts like the traffic you will serve.")
        browse_prompts = QPushButton("File…")
        browse_prompts.clicked.connect(self._browse_prompts)
        self.num_prompts = _spin(1, 100000, 48, "How many prompts the target answers (each once).")
        self.max_tokens = _spin(1, 1_000_000, 128, "Longest response the target writes per prompt.")
        self.seq_length = _spin(1, 10_000_000, 512, "Training sequence length (prompt + response, truncated).")
        self.epochs = _spin(1, 1000, 3, "Passes over the data. Raising it on a finished folder trains on "
                                        "from the last epoch checkpoint.")
        self.lr = QDoubleSpinBox(decimals=8, minimum=1e-8, maximum=10.0, singleStep=1e-4, value=1e-3)
        self.lr.setToolTip("Learning rate.")
        self.vocab = _spin(1, 10_000_000, 4096, "Draft vocabulary: the most frequent target tokens in the data "
                                             "(a smaller head trains faster; other tokens are never drafted).")
        self.layers = QLineEdit()
        self.layers.setPlaceholderText("default: 2, L/2, L-3")
        self.layers.setToolTip("Target decoder layers (1-based) whose outputs the draft reads, e.g. 2 15 27.")
        self.name = QLineEdit()
        self.name.setPlaceholderText("trained-eagle3-smollm2-135m")
        self.name.setToolTip("Name of the draft/target pair registered in your catalog (Models page).")
        self.out = LongValueEdit()
        self.out.setToolTip("Output folder. Starting again on the same folder resumes: finished steps are "
                            "skipped and cached hidden-state files reused.")
        browse_out = QPushButton("Folder…")
        browse_out.clicked.connect(self._browse_out)
        self.reuse = LongValueEdit()
        self.reuse.setPlaceholderText("empty: make the data in the output folder")
        self.reuse.setToolTip("Another training folder with the same data settings (e.g. an EAGLE-3 run): its "
                              "prompts, responses and hidden states are reused (hard-linked), so a DFlash "
                              "draft trains on exactly the same data without extracting it again.")
        browse_reuse = QPushButton("Folder…")
        browse_reuse.clicked.connect(self._browse_reuse)
        self.endpoint = QLineEdit()
        self.endpoint.setPlaceholderText("empty: Draftbench starts a vLLM server for the target")
        self.endpoint.setToolTip("Base URL of a vLLM server already serving this target (for the responses).")
        self.key_env = QLineEdit()
        self.key_env.setPlaceholderText("variable holding its API key (optional)")

        form = QFormLayout(self)
        form.addRow("Target", _row(self.target, browse_target))
        form.addRow("Method", self.method)
        form.addRow("Prompts", _row(self.prompts, browse_prompts))
        form.addRow("Prompts used", self.num_prompts)
        form.addRow("Response tokens", self.max_tokens)
        form.addRow("Sequence length", self.seq_length)
        form.addRow("Epochs", self.epochs)
        form.addRow("Learning rate", self.lr)
        form.addRow("Draft vocabulary", self.vocab)
        form.addRow("Target layers", self.layers)
        form.addRow("Pair name", self.name)
        form.addRow("Output folder", _row(self.out, browse_out))
        form.addRow("Reuse data from", _row(self.reuse, browse_reuse))
        form.addRow("Running server", self.endpoint)
        form.addRow("API key variable", self.key_env)
        hs = QLabel("Hidden states: extracted offline from the target with transformers (any device), in "
                    "speculators' file layout; files already in the folder are reused.")
        hs.setWordWrap(True)
        hs.setStyleSheet("color: #777;")
        form.addRow(hs)

        self.method.currentIndexChanged.connect(self._suggest_names)
        self.target.currentTextChanged.connect(self._suggest_names)
        self.out.editingFinished.connect(self.folder_changed)
        self._loading = False
        self._suggest_names()

    def inputs(self) -> tuple[QWidget, ...]:
        return (self.target, self.method, self.prompts, self.num_prompts, self.max_tokens, self.seq_length,
                self.epochs, self.lr, self.vocab, self.layers, self.name, self.out, self.reuse, self.endpoint,
                self.key_env)

    def options(self) -> dict[str, Any]:
        """The form as `draftbench train` options, named as its parser names them; None: left out."""
        def text(w: QLineEdit) -> str | None:
            return w.text().strip() or None

        return {
            "target": self.target.currentText().strip(), "out": self.out.text().strip(),
            "prompts": self.prompts.currentText().strip(), "num_prompts": self.num_prompts.value(),
            "max_tokens": self.max_tokens.value(), "seq_length": self.seq_length.value(),
            "epochs": self.epochs.value(), "lr": self.lr.value(), "speculator_type": self.method.currentData(),
            "draft_vocab_size": self.vocab.value(), "name": text(self.name) or self.name.placeholderText(),
            "layer_ids": self.layers.text().replace(",", " ").split() or None, "reuse": text(self.reuse),
            "endpoint": text(self.endpoint), "api_key_env": text(self.key_env),
        }

    def _suggest_names(self) -> None:
        if self._loading:
            return
        method = self.method.currentData()
        stem = Path(self.target.currentText().split(":")[-1].rstrip("/")).name or "target"
        suggested = f"trained-{method}-{stem}"
        self.name.setPlaceholderText(suggested)
        if not self.name.isModified():
            self.name.clear()  # a name shown from a loaded folder follows the new choice
        if not self.out.isModified() or not self.out.text():
            self.out.setText(str(default_out(self.name.text().strip() if self.name.isModified() else suggested)))
            self.folder_changed.emit()

    def _browse_target(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Target model folder")
        if path:
            self.target.setCurrentText(path)

    def _browse_prompts(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Prompt file", "", "Prompts (*.jsonl *.json *.txt);;All files (*)")
        if path:
            self.prompts.setCurrentText(path)

    def _browse_out(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Output folder", str(paths.data_dir()))
        if path:
            self.out.setText(path)
            self.out.setModified(True)
            self.folder_changed.emit()

    def _browse_reuse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Training folder to reuse", str(paths.data_dir() / "training"))
        if path:
            self.use_data_of(Path(path))

    def use_data_of(self, source: Path) -> None:
        """Reuse another run's data: the form takes its data settings (they must match), keeping
        this run's method, name and folder."""
        state = training.folder_state(source)
        if not state.get("config"):
            QMessageBox.warning(self, "Reuse data", state.get("error") or f"{source} holds no training run")
            return
        # Only the settings that shape the data: method, vocabulary and learning rate stay this run's.
        data = {k: v for k, v in state["config"].items() if k in training.DATA_KEYS + ("layer_ids",)}
        self.load_config(data, {})
        self.reuse.setText(str(source))

    def load_config(self, cfg: dict[str, Any], done: dict[str, Any]) -> None:
        """A folder with a run in it: the form takes that run's settings, so Start resumes it
        instead of being refused as another configuration."""
        self._loading = True
        try:
            self.target.setCurrentText(str(cfg.get("target", self.target.currentText())))
            i = self.method.findData(cfg.get("speculator_type"))
            if i >= 0:
                self.method.setCurrentIndex(i)
            self.prompts.setCurrentText(str(cfg.get("prompts", self.prompts.currentText())))
            for box, key in ((self.num_prompts, "num_prompts"), (self.max_tokens, "max_tokens"),
                             (self.seq_length, "seq_length"), (self.vocab, "draft_vocab_size")):
                if isinstance(cfg.get(key), int):
                    box.setValue(cfg[key])
            if isinstance(cfg.get("lr"), (int, float)):
                self.lr.setValue(cfg["lr"])
            if isinstance(done.get("train", {}).get("epochs"), int):
                self.epochs.setValue(done["train"]["epochs"])
            layers = cfg.get("layer_ids")
            self.layers.setText(" ".join(map(str, layers)) if layers else "")
            if done.get("register", {}).get("pair"):
                self.name.setText(done["register"]["pair"])
                self.name.setModified(False)
        finally:
            self._loading = False


def _spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox(minimum=lo, maximum=hi, value=value)
    box.setToolTip(tip)
    return box


def _row(*widgets: QWidget) -> QWidget:
    w = QWidget()
    h = QHBoxLayout(w)
    h.setContentsMargins(0, 0, 0, 0)
    for i, x in enumerate(widgets):
        h.addWidget(x, 1 if i == 0 else 0)
    return w
