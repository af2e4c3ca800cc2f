"""The Train page: train an EAGLE-3 or DFlash draft for a target from the target's own responses,
watch each step and the loss curve live, cancel, resume, and evaluate the draft in one click.

The work runs as `draftbench train` in a child process (the same pipeline as the command line);
the page follows its JSON-line events file. Stopping sends SIGTERM: the pipeline stops its
subprocess or server and keeps every finished step, so Start on the same folder resumes.
"""

from __future__ import annotations

import time
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QProcess, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout,
                               QLabel, QLineEdit, QMessageBox, QProgressBar, QPushButton, QSpinBox, QSplitter,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from app.widgets import charts, theme
from app.jobs.sweep import EventsFile, draftbench_argv
from workbench import paths, train
from workbench.checkpoints import demo

STEP_TITLES = {
    "prompts": "Choose prompts",
    "responses": "Generate responses with the target",
    "prepare": "Tokenize (speculators prepare-data)",
    "hidden_states": "Extract the target's hidden states",
    "train": "Train the draft",
    "checkpoint": "Write the checkpoint",
    "register": "Register the draft/target pair",
}
WORKLOADS = [train.SELF_PROMPTS, "builtin", "gsm8k", "math500", "humaneval", "mbpp"]
METHODS = [("EAGLE-3", "eagle3"), ("DFlash", "dflash")]


def default_out(name: str) -> Path:
    return paths.data_dir() / "training" / name


class TrainPage(QWidget):
    """Emits `evaluate(plan_path)` when the user asks to sweep the new draft against the baseline."""

    evaluate = Signal(str)
    finished = Signal(str)   # "done", "cancelled" or "failed"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.process: QProcess | None = None
        self.events: EventsFile | None = None
        self.curve = train.LossCurve()
        self._drawn_val: dict | None = None
        self._cancelling = False
        self.summary: dict | None = None
        self.timer = QTimer(self, interval=200)
        self.timer.timeout.connect(self.poll)

        # -- the form ------------------------------------------------------------------------------
        self.target = QComboBox(editable=True)
        self.target.addItems([f"demo:{m.name}" for m in demo.ALL if m.role == "target"] or ["demo:smollm2-135m"])
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
        self.out = QLineEdit()
        self.out.setToolTip("Output folder. Starting again on the same folder resumes: finished steps are "
                            "skipped and cached hidden-state files reused.")
        browse_out = QPushButton("Folder…")
        browse_out.clicked.connect(self._browse_out)
        self.reuse = QLineEdit()
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

        form = QFormLayout()
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
        settings = QGroupBox("Training run")
        settings.setLayout(form)

        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Start, or resume the run in the output folder (Ctrl+Return)")
        self.start_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop after saving what is finished; Start resumes (Esc)")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        self.evaluate_button = QPushButton("Evaluate against baseline")
        self.evaluate_button.setToolTip("Load the evaluation plan (baseline vs the new draft over N) and run it")
        self.evaluate_button.clicked.connect(self._evaluate)
        self.evaluate_button.setEnabled(False)
        self.open_button = QPushButton("Open folder")
        self.open_button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(self.out.text())))
        buttons = QHBoxLayout()
        for b in (self.start_button, self.cancel_button, self.evaluate_button, self.open_button):
            buttons.addWidget(b)
        left = QVBoxLayout()
        left.addWidget(settings)
        left.addLayout(buttons)
        left.addStretch(1)
        left_widget = QWidget()
        left_widget.setLayout(left)

        # -- progress ------------------------------------------------------------------------------
        self.steps = QTreeWidget()
        self.steps.setHeaderLabels(["Step", "State", "Detail"])
        self.step_items: dict[str, QTreeWidgetItem] = {}
        for key in train.STEPS:
            item = QTreeWidgetItem([STEP_TITLES[key], "pending", ""])
            self.steps.addTopLevelItem(item)
            self.step_items[key] = item
        self.steps.setColumnWidth(0, 250)
        self.steps.setColumnWidth(1, 110)
        self.steps.setMaximumHeight(190)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        self.status = QLabel("Choose a target and prompts, then Start.")
        self.status.setWordWrap(True)

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
        self.export_button = QPushButton("Export charts…")
        self.export_button.clicked.connect(self.export_charts)
        right = QVBoxLayout()
        right.addWidget(self.steps)
        right.addWidget(self.progress)
        right.addWidget(self.status)
        right.addWidget(self.loss_plot, 3)
        right.addWidget(self.acc_plot, 2)
        right.addWidget(self.export_button)
        right_widget = QWidget()
        right_widget.setLayout(right)

        split = QSplitter()
        split.addWidget(left_widget)
        split.addWidget(right_widget)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(split)

        QShortcut(QKeySequence("Ctrl+Return"), self, activated=self.start)
        QShortcut(QKeySequence("Escape"), self, activated=self.cancel)
        self.method.currentIndexChanged.connect(self._suggest_names)
        self.target.currentTextChanged.connect(self._suggest_names)
        self.out.editingFinished.connect(self.show_folder)
        self._loading = False
        self._suggest_names()

    # -- form helpers --------------------------------------------------------------------------------
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
            self.show_folder()

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
            self.show_folder()

    def _browse_reuse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Training folder to reuse", str(paths.data_dir() / "training"))
        if path:
            self.use_data_of(Path(path))

    def use_data_of(self, source: Path) -> None:
        """Reuse another run's data: the form takes its data settings (they must match), keeping
        this run's method, name and folder."""
        state = train.folder_state(source)
        if not state.get("config"):
            QMessageBox.warning(self, "Reuse data", state.get("error") or f"{source} holds no training run")
            return
        # Only the settings that shape the data: method, vocabulary and learning rate stay this run's.
        data = {k: v for k, v in state["config"].items() if k in train.DATA_KEYS + ("layer_ids",)}
        self._load_config(data, {})
        self.reuse.setText(str(source))

    def argv(self, events: Path) -> list[str]:
        name = self.name.text().strip() or self.name.placeholderText()
        args = ["train", "--target", self.target.currentText().strip(), "--out", self.out.text().strip(),
                "--prompts", self.prompts.currentText().strip(), "--num-prompts", str(self.num_prompts.value()),
                "--max-tokens", str(self.max_tokens.value()), "--seq-length", str(self.seq_length.value()),
                "--epochs", str(self.epochs.value()), "--lr", repr(self.lr.value()),
                "--speculator-type", self.method.currentData(), "--draft-vocab-size", str(self.vocab.value()),
                "--name", name, "--events", str(events)]
        if self.layers.text().strip():
            args += ["--layer-ids", *self.layers.text().replace(",", " ").split()]
        if self.reuse.text().strip():
            args += ["--reuse", self.reuse.text().strip()]
        if self.endpoint.text().strip():
            args += ["--endpoint", self.endpoint.text().strip()]
        if self.key_env.text().strip():
            args += ["--api-key-env", self.key_env.text().strip()]
        return args

    # -- running -------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.process is not None and self.process.state() != QProcess.NotRunning

    def start(self) -> None:
        if self.running:
            return
        if not self.out.text().strip():
            QMessageBox.warning(self, "Train", "Choose an output folder.")
            return
        out = Path(self.out.text().strip()).expanduser()
        self.out.setText(str(out))
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            QMessageBox.warning(self, "Train", f"cannot create the output folder {out}: {exc.strerror}")
            return
        events_path = out / f"events-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        try:
            events_path.touch()
        except OSError as exc:
            QMessageBox.warning(self, "Train", f"cannot write in the output folder {out}: {exc.strerror}")
            return
        self.events = EventsFile(events_path)
        # The curve so far (earlier attempts in this folder); this run's steps arrive as events.
        self.curve = train.LossCurve.read(out)
        self._cancelling, self.summary = False, None
        self.process = QProcess(self)
        self.process.setProcessChannelMode(QProcess.SeparateChannels)
        self.process.finished.connect(self._finished)
        self.process.setWorkingDirectory(str(Path.cwd()))
        program, args = draftbench_argv(*self.argv(events_path))
        self.process.start(program, args)
        if not self.process.waitForStarted(10000):
            QMessageBox.critical(self, "Train", f"could not start the training process ({program})")
            self.process = None
            return
        self._set_running(True)
        self.status.setText("Starting…")
        self.timer.start()

    def cancel(self) -> None:
        if not self.running:
            return
        self._cancelling = True
        self.status.setText("Cancelling: stopping the current step (finished steps are kept)…")
        self.process.terminate()  # SIGTERM: the pipeline stops its subprocess or server and exits

    def shutdown(self, wait_ms: int = 90000) -> None:
        """On closing the app: cancel (resumable) and wait for the child to tidy up."""
        if self.running:
            self.cancel()
            self.process.waitForFinished(wait_ms)

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for w in (self.target, self.method, self.prompts, self.num_prompts, self.max_tokens, self.seq_length,
                  self.epochs, self.lr, self.vocab, self.layers, self.name, self.out, self.reuse, self.endpoint, self.key_env):
            w.setEnabled(not running)
        if running:
            self.evaluate_button.setEnabled(False)

    def _finished(self, code: int, _status) -> None:
        self.poll()
        self.timer.stop()
        err = bytes(self.process.readAllStandardError()).decode(errors="replace").strip()
        self._set_running(False)
        if self.summary is not None:
            outcome = "done"
            self.status.setText(f"Done: draft {self.summary['checkpoint']} registered as {self.summary['pair']}. "
                                "Evaluate it against the baseline in one click.")
            self.evaluate_button.setEnabled(True)
        elif self._cancelling or code == 130:
            outcome = "cancelled"
            self.status.setText("Cancelled. Finished steps are kept: Start resumes where it stopped.")
        else:
            outcome = "failed"
            lines = [line for line in err.splitlines() if line.startswith("draftbench:")]
            message = (lines[-1] if lines else (err.splitlines()[-1] if err else f"exit status {code}"))
            message = message.removeprefix("draftbench: ")
            self.status.setText(f"Failed: {message}")
            QMessageBox.warning(self, "Train", message)
        for item in self.step_items.values():
            if item.text(1) == "running":
                item.setText(1, outcome if outcome != "done" else "done")
        self.start_button.setText("Resume" if train.folder_state(Path(self.out.text()))["resumable"] else "Start")
        self.process.deleteLater()
        self.process = None
        self.finished.emit(outcome)

    # -- events --------------------------------------------------------------------------------------
    def poll(self) -> None:
        if self.events is None:
            return
        changed = False
        for event in self.events.read():
            changed |= self.on_event(event)
        if changed:
            self._draw_curve()

    def on_event(self, e: dict) -> bool:
        """Updates the step list and status; True when the loss history changed."""
        kind, step = e.get("event"), e.get("step")
        item = self.step_items.get(step) if isinstance(step, str) else None
        if kind == "step_started" and item:
            item.setText(1, "running")
            item.setText(2, "")
            self.progress.setRange(0, 0)  # busy until a count arrives
            self.status.setText(STEP_TITLES[step] + "…")
        elif kind == "step_skipped" and item:
            if item.text(1) != "reused":
                item.setText(1, "done earlier")
        elif kind == "step_finished" and item:
            item.setText(1, "done")
            item.setText(2, _detail(step, e))
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
        elif kind == "progress" and item:
            self.progress.setRange(0, int(e["total"]))
            self.progress.setValue(int(e["done"]))
            item.setText(2, f"{e['done']} of {e['total']}")
        elif kind == "server_starting":
            self.status.setText("Starting a vLLM server for the target (this takes a minute on CPU)…")
        elif kind in ("train_step", "validation"):
            epochs = self.epochs.value()
            loss = e.get("loss")
            text = f"epoch {int(e.get('epoch') or 0) + 1} of {epochs}"
            if kind == "train_step":
                text += f", step {e.get('step')}"
            if isinstance(loss, (int, float)):
                text += f", {'validation ' if kind == 'validation' else ''}loss {loss:.3f}"
            self.step_items["train"].setText(2, text)
            self.status.setText("Training: " + text)
            # Epochs finished out of those asked for (a step count is not known in advance).
            self.progress.setRange(0, epochs)
            self.progress.setValue(min(epochs, int(e.get("epoch") or 0) + (kind == "validation")))
            self.curve.add({"train" if kind == "train_step" else "val": e.get("metrics") or {}})
            return True
        elif kind == "reused":
            for key in e.get("steps", []):
                if key in self.step_items:
                    self.step_items[key].setText(1, "reused")
                    self.step_items[key].setText(2, "from " + e["source"])
        elif kind == "done":
            self.summary = e
        return False

    def show_folder(self) -> None:
        """Shows what the output folder already holds (finished steps, the loss so far)."""
        if self.running:
            return
        text = self.out.text().strip()
        state = train.folder_state(Path(text)) if text else {"done": {}, "resumable": False}
        if state.get("config"):
            self._load_config(state["config"], state["done"])
        for key, item in self.step_items.items():
            info = state["done"].get(key)
            item.setText(1, ("reused" if info.get("reused_from") else "done") if info else "pending")
            item.setText(2, _detail(key, info) if info else "")
        self.start_button.setText("Resume" if state["resumable"] else "Start")
        finished = "register" in state["done"]
        self.evaluate_button.setEnabled(finished)
        self.summary = None
        if finished:
            reg = state["done"]["register"]
            self.summary = {"plan": reg["plan"], "pair": reg["pair"],
                            "checkpoint": state["done"].get("checkpoint", {}).get("path")}
        self.curve = train.LossCurve.read(Path(text)) if text else train.LossCurve()
        if state.get("error"):
            self.status.setText(state["error"])
        elif state["done"]:
            self.status.setText(f"{len(state['done'])} of {len(train.STEPS)} steps finished in this folder"
                                + (": Resume goes on from there." if state["resumable"] else "."))
        self._draw_curve()

    def _load_config(self, cfg: dict, done: dict) -> None:
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

    def _draw_curve(self) -> None:
        c = self.curve
        self.train_curve.setData(list(range(1, len(c.train_loss) + 1)), c.train_loss)
        self.val_curve.setData(c.val_step, c.val_loss)
        if c.last_val is self._drawn_val:
            return  # the accuracy bars change only with a validation
        self._drawn_val = c.last_val
        self.acc_plot.clear()
        acc = train.position_accuracy(c.last_val) if c.last_val else []
        if acc:
            self.acc_plot.addItem(pg.BarGraphItem(x=list(range(1, len(acc) + 1)), height=acc, width=0.7,
                                                  brush=theme.color(2)))
            title = "Validation accuracy by draft position"
            eal = c.last_val.get("eal_epoch")
            if isinstance(eal, (int, float)):
                title += f" (expected accepted length {eal:.2f})"
            self.acc_plot.setTitle(title)

    def _evaluate(self) -> None:
        if self.summary and self.summary.get("plan"):
            self.evaluate.emit(self.summary["plan"])

    def export_charts(self) -> None:
        base, _ = QFileDialog.getSaveFileName(self, "Export charts", str(Path(self.out.text()) / "training.png"),
                                              "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)")
        if base:
            self.export_to(Path(base))

    def export_to(self, base: Path) -> list[Path]:
        """The loss chart as BASE and the accuracy chart as BASE-accuracy, same format."""
        written = [base, base.with_name(base.stem + "-accuracy" + base.suffix)]
        try:
            charts.export(self.loss_plot, written[0])
            charts.export(self.acc_plot, written[1])
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export charts", str(exc))
            return []
        return written


def _detail(step: str, info: dict) -> str:
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


def _spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox(minimum=lo, maximum=hi, value=value)
    box.setToolTip(tip)
    return box


def _row(*widgets) -> QWidget:
    w = QWidget()
    h = QHBoxLayout(w)
    h.setContentsMargins(0, 0, 0, 0)
    for i, x in enumerate(widgets):
        h.addWidget(x, 1 if i == 0 else 0)
    return w
