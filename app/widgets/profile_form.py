"""The launch-profile part of the Experiment page: where vLLM runs (this machine's environment, a
docker image, or a server someone already started), on which GPUs, with which tensor parallelism."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QInputDialog, QLabel, QLineEdit,
    QMessageBox, QPushButton, QSpinBox, QWidget,
)

from workbench.plan import profiles
from workbench.plan.profiles import Profile, ProfileError

KIND_LABELS = {"local": "this machine (a Python environment with vLLM)",
               "docker": "docker (the official vLLM image)",
               "attach": "attach to a running server (no start or stop)"}
ATTACH_WARNING = ("⚠ An attached server's counters include any other traffic it serves: throughput and "
                  "per-position figures are only clean if Draftbench is its only client. Acceptance is taken "
                  "from vLLM's per-request figures where the server reports them "
                  "(--per-request-spec-decode-metrics).")


# Controls that apply only on some hosts, and why one is not shown on this one.
HOST_ONLY = {"aiter": "AITER kernels (ROCm only: choose GPU stack rocm to set them for a ROCm host)",
             "ray": "Ray cluster (its servers need GPUs, and this host has none)"}


class ProfileForm(QGroupBox):
    changed = Signal()
    # The `[profile]` keys the controls of each kind set, and those another kind may not have: what
    # table() writes in place of a plan's own. The plan's other keys (its name, docker client, HF
    # cache and env, and what a kind does not show) are the page's to keep.
    CONTROLLED = {"local": {"platform", "python", "tensor_parallel_size", "draft_tensor_parallel_size", "gpus",
                            "rocm_use_aiter", "attention_backend", "image", "base_url"},
                  "docker": {"platform", "tensor_parallel_size", "draft_tensor_parallel_size", "gpus",
                             "rocm_use_aiter", "attention_backend", "image", "base_url"},
                  "attach": {"base_url", "api_key_env", "image"}}

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Launch profile", parent)
        self.host_platform: str | None = None  # as gpus.detect says ('rocm', 'cuda', 'none'); None until it answers
        self.saved = QComboBox()
        self.saved.setToolTip("Profiles saved in the config folder (profiles.toml); a plan can name one")
        self.saved.activated.connect(self._use_saved)
        save = QPushButton("Save as…")
        save.setToolTip("Save these settings as a named profile")
        save.clicked.connect(self._save)
        saved_row = QHBoxLayout()
        saved_row.addWidget(self.saved, 1)
        saved_row.addWidget(save)
        self.kind = QComboBox()
        for kind, label in KIND_LABELS.items():
            self.kind.addItem(label, kind)
        self.platform = QComboBox()
        self.platform.addItems(list(profiles.PLATFORMS))
        self.platform.setToolTip("auto: ROCm or CUDA as the host's GPU tools report it")
        self.python = QLineEdit()
        self.python.setPlaceholderText("default: Draftbench's own, or DRAFTBENCH_VLLM_PYTHON")
        self.python.setToolTip("An interpreter (e.g. a virtualenv's bin/python) that has vLLM")
        self.tp = QSpinBox(minimum=1, maximum=512)
        self.tp.setToolTip("Tensor-parallel size: the target is sharded over this many GPUs (--tensor-parallel-size)")
        self.draft_tp = QComboBox()
        self.draft_tp.setToolTip("The draft's tensor-parallel size: vLLM accepts 1 or the target's")
        self.draft_tp.addItem("same as the target", None)
        self.draft_tp.addItem("1 (unsharded)", 1)
        self.gpus = QLineEdit()
        self.gpus.setPlaceholderText("all visible, or e.g. 0, 1")
        self.gpus.setToolTip("Physical GPU indices (as nvidia-smi / amd-smi number them). On ROCm both "
                             "HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES are set, as vLLM requires them equal")
        self.aiter = QCheckBox("VLLM_ROCM_USE_AITER (AMD's AITER kernels)")
        self.aiter.setTristate(True)
        self.aiter.setCheckState(Qt.CheckState.PartiallyChecked)
        self.aiter.setToolTip("Partially checked: vLLM's default (off)")
        self.backend = QLineEdit()
        self.backend.setPlaceholderText("vLLM's choice")
        self.backend.setToolTip("--attention-backend, e.g. TRITON_ATTN (AMD recipes use it for DFlash)")
        self.image = QLineEdit()
        self.image.setPlaceholderText(f"{profiles.ROCM_IMAGE} or {profiles.CUDA_IMAGE}")
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("http://127.0.0.1:8000")
        self.api_key_env = QLineEdit()
        self.api_key_env.setPlaceholderText("e.g. MY_VLLM_KEY (the variable's name, never the key)")
        self.parallel = QComboBox()
        self.parallel.setToolTip("How many servers run at once, each on its own GPU slot of tensor-parallel-size "
                                 "GPUs (the plan's [sweep] parallel); auto: as many as the GPUs allow")
        for label, value in (("1 (one server at a time)", 1), ("auto (as many as the GPUs allow)", "auto"),
                             *((str(n), n) for n in range(2, 9))):
            self.parallel.addItem(label, value)
        self.ray = QLineEdit()
        self.ray.setPlaceholderText("none: this machine; or auto, or the head's HOST:PORT")
        self.ray.setToolTip("Run the servers as tasks on a Ray cluster (pip install 'draftbench[cluster]'): "
                            "auto finds the one `ray start --head` runs here; the results come back to this database")
        self.host_note = QLabel()
        self.host_note.setWordWrap(True)
        self.host_note.setStyleSheet("color: #777;")
        self.warning = QLabel(ATTACH_WARNING)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("color: #E69F00")
        self.form = form = QFormLayout(self)
        form.addRow("Saved", saved_row)
        form.addRow("Runs on", self.kind)
        self.rows: dict[str, QWidget] = {}
        for key, label, widget in (("platform", "GPU stack", self.platform), ("python", "vLLM Python", self.python),
                                   ("tp", "Tensor parallel", self.tp), ("draft_tp", "Draft TP", self.draft_tp),
                                   ("gpus", "GPUs", self.gpus), ("aiter", "", self.aiter),
                                   ("backend", "Attention backend", self.backend), ("image", "Image", self.image),
                                   ("base_url", "Server URL", self.base_url), ("api_key_env", "API key variable",
                                                                               self.api_key_env),
                                   ("parallel", "Servers at once", self.parallel), ("ray", "Ray cluster", self.ray)):
            form.addRow(label, widget)
            self.rows[key] = widget
        form.addRow(self.host_note)
        form.addRow(self.warning)
        self.refresh_saved()
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.platform.currentIndexChanged.connect(self._kind_changed)  # rocm chosen: AITER applies
        for w in (self.python, self.gpus, self.backend, self.image, self.base_url, self.api_key_env, self.ray):
            w.textChanged.connect(self.changed)
        for combo in (self.platform, self.draft_tp, self.parallel):
            combo.currentIndexChanged.connect(self.changed)
        self.tp.valueChanged.connect(self.changed)
        self.aiter.stateChanged.connect(self.changed)
        self._kind_changed()

    def _kind_changed(self) -> None:
        kind = self.kind.currentData()
        shown = {"local": {"platform", "python", "tp", "draft_tp", "gpus", "aiter", "backend", "parallel", "ray"},
                 "docker": {"platform", "tp", "draft_tp", "gpus", "aiter", "backend", "image", "parallel"},
                 "attach": {"base_url", "api_key_env"}}[kind]
        off_here = self._not_for_this_host() & shown
        form = self.form
        for key, widget in self.rows.items():
            form.setRowVisible(widget, key in shown - off_here)
        self.host_note.setText("Not shown on this host: " + "; ".join(HOST_ONLY[k] for k in sorted(off_here)))
        form.setRowVisible(self.host_note, bool(off_here))
        form.setRowVisible(self.warning, kind == "attach")
        self.changed.emit()

    def set_host(self, host_platform: str) -> None:
        """What the host's GPU tools found ('rocm', 'cuda' or 'none'): controls that cannot apply
        on it are hidden, and a line says which and why."""
        self.host_platform = host_platform
        self._kind_changed()

    def _not_for_this_host(self) -> set[str]:
        """The host-only controls that cannot apply here. A control holding a value (from a plan or a
        saved profile) stays shown, so no setting is ever hidden; before detection answers, all show."""
        if self.host_platform is None:
            return set()
        off: set[str] = set()
        rocm = self.platform.currentText() == "rocm" or (self.platform.currentText() == "auto"
                                                         and self.host_platform == "rocm")
        if not rocm and self.aiter.checkState() == Qt.CheckState.PartiallyChecked:
            off.add("aiter")
        if self.host_platform not in ("rocm", "cuda") and not self.ray.text().strip():
            off.add("ray")
        return off

    def refresh_saved(self) -> None:
        self.saved.clear()
        self.saved.addItem("(these settings)", None)
        try:
            for name in sorted(profiles.load_saved()):
                self.saved.addItem(name, name)
        except ProfileError as exc:
            self.saved.setToolTip(str(exc))

    def _use_saved(self) -> None:
        name = self.saved.currentData()
        if name:
            self.set_profile(profiles.load_saved()[name])

    def _save(self) -> None:
        name, ok = QInputDialog.getText(self, "Save launch profile", "Name:")
        if not ok or not name.strip():
            return
        try:
            table = self.table()
            table["name"] = name.strip()
            profiles.save(profiles.from_table(table))
        except ProfileError as exc:
            QMessageBox.warning(self, "Launch profile", str(exc))
            return
        self.refresh_saved()
        self.saved.setCurrentIndex(self.saved.findData(name.strip()))

    def set_profile(self, p: Profile) -> None:
        self.kind.setCurrentIndex(self.kind.findData(p.kind))
        self.platform.setCurrentText(p.platform)
        self.python.setText(p.python or "")
        self.tp.setValue(p.tensor_parallel_size)
        self.draft_tp.setCurrentIndex(1 if p.draft_tensor_parallel_size == 1 else 0)
        # "Same as the target" said outright in the plan stays said (it is part of the runs' keys).
        self._draft_tp_stated = p.draft_tensor_parallel_size not in (None, 1)
        self.gpus.setText(", ".join(map(str, p.gpus)))
        self.aiter.setCheckState(Qt.CheckState.PartiallyChecked if p.rocm_use_aiter is None
                                 else Qt.CheckState.Checked if p.rocm_use_aiter else Qt.CheckState.Unchecked)
        self.backend.setText(p.attention_backend or "")
        self.image.setText(p.image or "")
        self.base_url.setText(p.base_url or "")
        self.api_key_env.setText(p.api_key_env or "")
        self._kind_changed()

    def controlled(self) -> frozenset[str]:
        """The profile keys table() speaks for with the kind chosen now."""
        return frozenset({"kind", *self.CONTROLLED[self.kind.currentData()]})

    def sweep_parallel(self) -> int | str:
        """Servers at once, for the plan's [sweep] parallel (1 for an attached server)."""
        return 1 if self.kind.currentData() == "attach" else self.parallel.currentData()

    def set_parallel(self, value: int | str) -> None:
        i = self.parallel.findData(value)
        if i < 0 and isinstance(value, int):
            self.parallel.addItem(str(value), value)
            i = self.parallel.count() - 1
        self.parallel.setCurrentIndex(max(i, 0))

    def ray_address(self) -> str | None:
        """The Ray cluster to start the sweep on (`--ray`), or None: this machine."""
        return (self.ray.text().strip() or None) if self.kind.currentData() == "local" else None

    def table(self) -> dict[str, Any]:
        """The `[profile]` table these settings make (only what differs from the defaults)."""
        kind = self.kind.currentData()
        t: dict[str, Any] = {"kind": kind}
        if kind == "attach":
            t["base_url"] = self.base_url.text().strip()
            if self.api_key_env.text().strip():
                t["api_key_env"] = self.api_key_env.text().strip()
            return t
        if self.platform.currentText() != "auto":
            t["platform"] = self.platform.currentText()
        if kind == "local" and self.python.text().strip():
            t["python"] = self.python.text().strip()
        if self.tp.value() > 1:
            t["tensor_parallel_size"] = self.tp.value()
        if self.draft_tp.currentData() is not None:
            t["draft_tensor_parallel_size"] = self.draft_tp.currentData()
        elif getattr(self, "_draft_tp_stated", False):
            t["draft_tensor_parallel_size"] = self.tp.value()
        gpus = self.gpus.text().replace(",", " ").split()
        if gpus:
            try:
                t["gpus"] = [int(g) for g in gpus]
            except ValueError:
                raise ProfileError(f"GPUs must be indices such as 0, 1 — not {self.gpus.text()!r}") from None
        if self.aiter.checkState() != Qt.CheckState.PartiallyChecked:
            t["rocm_use_aiter"] = self.aiter.checkState() == Qt.CheckState.Checked
        if self.backend.text().strip():
            t["attention_backend"] = self.backend.text().strip()
        if kind == "docker" and self.image.text().strip():
            t["image"] = self.image.text().strip()
        return t
