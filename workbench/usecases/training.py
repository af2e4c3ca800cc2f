"""What the Train page reads of a training folder while its `draftbench train` child runs: the
steps, the folder's state, the loss curve and the per-position accuracy (workbench.train)."""

from __future__ import annotations

from typing import Any
from pathlib import Path

from workbench import train
from workbench.train import DATA_KEYS, SELF_PROMPTS, STEPS, LossCurve

__all__ = ["DATA_KEYS", "SELF_PROMPTS", "STEPS", "LossCurve", "folder_state", "position_accuracy"]


def folder_state(out: Path) -> dict[str, Any]:
    """What an output folder holds: its configuration and finished steps, and whether the next start resumes."""
    return train.folder_state(out)


def position_accuracy(metrics: dict[str, Any]) -> list[float]:
    """Accuracy of the draft's k-th token (k = 1, 2, ...) from one speculators metric record."""
    return train.position_accuracy(metrics)
