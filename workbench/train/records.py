"""Reading what training writes: the prompts and responses files, metric records as events,
losses, per-position accuracy, the best checkpoint, the loss curve of a folder and the state a
folder is in."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from workbench import events, paths
from workbench.train.config import MANIFEST, STEPS, TrainError


def _metric_event(record: dict[str, Any]) -> events.Event | None:
    # Other records (none that the page or a user reads) stay in train-metrics.jsonl only.
    if "train" in record:
        return events.TrainStep(step=record.get("global_step"), epoch=record.get("epoch"),
                                loss=loss_of(record["train"]), metrics=record["train"])
    if "val" in record:
        return events.Validation(epoch=record.get("epoch"), loss=loss_of(record["val"]), metrics=record["val"])
    return None


def loss_of(metrics: dict[str, Any]) -> float | None:
    for key in ("loss", "loss_epoch"):
        if isinstance(metrics.get(key), (int, float)):
            return metrics[key]
    return None


def best_checkpoint(save: Path) -> Path | None:
    """`checkpoint_best` when training kept one, else the highest-numbered epoch folder."""
    if (save / "checkpoint_best" / "config.json").exists():
        return (save / "checkpoint_best").resolve()
    epochs = sorted((p for p in save.glob("*") if p.name.isdigit() and (p / "config.json").exists()),
                    key=lambda p: int(p.name))
    return epochs[-1] if epochs else None


def _cached_matches(path: Path, token_ids: Any, n_layers: int) -> bool:
    # Deferred: safetensors (with torch) takes seconds to import and only the hidden-states step needs it
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as f:
            ids = f.get_tensor("token_ids")
            shape = f.get_slice("hidden_states").get_shape()
    except Exception:  # noqa: BLE001 - a damaged or foreign file is regenerated
        return False
    return ids.shape == token_ids.shape and bool((ids == token_ids).all()) and shape[1] == n_layers


def _load_dataset(folder: Path) -> Any:  # a datasets.Dataset
    # Deferred: the datasets package takes seconds to import and only the training steps need it
    from datasets import load_from_disk

    try:
        return load_from_disk(str(folder))
    except (OSError, FileNotFoundError, ValueError) as exc:
        raise TrainError(f"cannot read the prepared data in {folder}: {exc}") from None


def _speculators() -> str:
    exe = Path(sys.executable).with_name("speculators")
    if not exe.exists():
        raise TrainError("the `speculators` package is missing: install Draftbench with the `train` extra")
    return str(exe)


def _cut_to_last_line(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


# -- the data files, one JSON object a line in the layout speculators reads ----------------------------
# A chat message as OpenAI's API takes it ({"role": ..., "content": ...}): sent to vLLM and handed
# to speculators as it is, so it stays that API's mapping.
Message = dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """A line of prompts.jsonl: its id (p0, p1, ...) and the chat to answer (one user turn)."""
    id: str
    messages: list[Message]


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """A line of responses.jsonl, as `speculators regenerate-responses` writes it: the prompt's
    chat with the target's answer appended, and the token ids vLLM used, the prompt's masked 0
    and the generated ones 1 in `loss_mask`."""
    id: str
    messages: list[Message]
    input_ids: list[int]
    loss_mask: list[int]


def _field(line: Mapping[str, Any], name: str, kind: type, path: Path) -> Any:
    value = line.get(name)
    if not isinstance(value, kind):
        raise TrainError(f"{path} has a line without a valid {name!r}: not a file this step wrote")
    return value


def prompt_of(line: Mapping[str, Any], path: Path) -> Prompt:
    """A line of a prompts file read as a Prompt; TrainError names the file when it is not one."""
    return Prompt(id=_field(line, "id", str, path), messages=_field(line, "messages", list, path))


def response_of(line: Mapping[str, Any], path: Path) -> Response:
    """A line of a responses file read as a Response; TrainError names the file when it is not one."""
    return Response(id=_field(line, "id", str, path), messages=_field(line, "messages", list, path),
                    input_ids=_field(line, "input_ids", list, path), loss_mask=_field(line, "loss_mask", list, path))


def read_prompts(path: Path) -> list[Prompt]:
    # Written whole (atomically): every line is complete.
    return [prompt_of(json.loads(line), path) for line in path.read_text().splitlines() if line]


def read_responses(path: Path) -> list[Response]:
    """The responses in a file appended one line at a time (none when it does not exist); a line
    cut by a crash is skipped."""
    return [response_of(line, path) for line in events.read_objects(path)]


def _write_jsonl(path: Path, lines: Iterable[Prompt | Response]) -> None:
    paths.write_atomic(path, "".join(json.dumps(asdict(line)) + "\n" for line in lines))


# -- reading a training folder (for the Train page and reports) ------------------------------------
_POSITION_KEY = re.compile(r"^(?:full_acc_(\d+)|position_(\d+)_acc)(?:_epoch)?$")


def position_accuracy(metrics: dict[str, Any]) -> list[float]:
    """Accuracy of the draft's k-th token (k = 1, 2, ...) from one speculators metric record.
    EAGLE-3 names them `full_acc_0..` (0-based; a position counts only when every earlier one
    was right too, as acceptance requires); DFlash `position_1_acc..` (1-based, each position on
    its own; its `eal` is the expected accepted length per block)."""
    found: dict[int, float] = {}
    for key, value in metrics.items():
        m = _POSITION_KEY.match(key)
        if m and isinstance(value, (int, float)):
            found[int(m.group(1)) + 1 if m.group(1) is not None else int(m.group(2))] = float(value)
    return [found[k] for k in sorted(found)]


@dataclass
class LossCurve:
    """Training loss per step and validation loss after each epoch, in the order run (a resumed
    run's records follow the earlier ones), with the latest validation metrics."""
    train_loss: list[float] = field(default_factory=list)
    val_step: list[int] = field(default_factory=list)    # training steps run before each validation
    val_loss: list[float] = field(default_factory=list)
    last_val: dict[str, Any] | None = None

    def add(self, record: dict[str, Any]) -> None:
        """One speculators metric record: {"train": metrics} or {"val": metrics}."""
        if "train" in record:
            loss = loss_of(record["train"])
            if loss is not None:
                self.train_loss.append(loss)
        elif "val" in record:
            loss = loss_of(record["val"])
            if loss is not None:
                self.val_step.append(len(self.train_loss))
                self.val_loss.append(loss)
                self.last_val = record["val"]

    @classmethod
    def read(cls, out: Path) -> "LossCurve":
        """The curve of every training attempt in `out`."""
        curve = cls()
        for record in events.read_objects(Path(out) / "train-metrics.jsonl"):
            curve.add(record)
        return curve


def folder_state(out: Path) -> dict[str, Any]:
    """What an output folder holds: its configuration and finished steps (empty when new), and
    whether the next start resumes. A damaged manifest is reported, not raised."""
    path = Path(out) / MANIFEST
    if not path.exists():
        return {"config": None, "done": {}, "resumable": False}
    try:
        m = json.loads(path.read_text())
        done = dict(m.get("done", {}))
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        return {"config": None, "done": {}, "resumable": False, "error": f"cannot read {path}: {exc}"}
    return {"config": m.get("config"), "done": done, "resumable": 0 < len(done) < len(STEPS)}
