"""`python -m workbench.train.speculators_cpu ARGS...`: `speculators train ARGS...` that also runs on a
machine without an accelerator, and prints each metric record as one JSON line for Draftbench.

speculators 0.9.0 assumes an accelerator in three places that matter on CPU; all are patched
here at run time (the installed package is left untouched):
  1. the trainer moves the model and every batch to `get_local_rank()`, an accelerator index
     (0 means cuda:0): on CPU it is the string "cpu" instead;
  2. its step timer calls `torch.accelerator.synchronize()`, which raises "Cannot access
     accelerator device when none is available": on CPU there is nothing to wait for;
  3. resuming from an epoch checkpoint, its single-device checkpointer loads the weights and
     the optimizer state onto `speculators.utils.util.get_current_device()`, which answers
     "cuda:0" when `torch.accelerator.current_accelerator()` is None. safetensors then stages
     the weights in pinned memory for the copy to that device and fails with "pin_memory=True
     requires a CUDA or other accelerator backend" (and `torch.load(map_location="cuda:0")` of
     the optimizer state would fail next): on CPU the checkpointer loads onto "cpu" instead.
With an accelerator present nothing is patched.

For tests, DRAFTBENCH_TEST_TRAIN_HOLD_EPOCH=E (0-based) makes the trainer wait, once it has
reported the first training step of epoch E, until a signal stops it: a test then cancels at a
point it chose instead of racing the trainer. E=0 holds it before any checkpoint exists; with
`--save-best` E=1 holds it after the first epoch's checkpoint is complete (speculators writes it
after that epoch's validation, before the next epoch's first step).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

EVENT_PREFIX = "DRAFTBENCH_METRICS "
HOLD_VAR = "DRAFTBENCH_TEST_TRAIN_HOLD_EPOCH"


def _jsonable(obj: object) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item"):
        try:
            return obj.item()
        except (ValueError, RuntimeError):
            return None
    if isinstance(obj, (int, float, str, bool)) or obj is None:
        return obj
    return str(obj)


def _hold_epoch() -> int | None:
    value = os.environ.get(HOLD_VAR, "").strip()
    return int(value) if value else None


class _EchoLogger:
    """Stands in for speculators' metric logger: forwards every record, and prints the metric
    dictionaries (train steps, validation epochs) as JSON lines on stdout."""

    def __init__(self, inner: Any, hold_epoch: int | None = None) -> None:
        self._inner = inner
        self._hold_epoch = hold_epoch

    def info(self, msg: object, *args: Any, **kwargs: Any) -> Any:
        if isinstance(msg, dict):
            sys.stdout.write(EVENT_PREFIX + json.dumps(_jsonable(msg)) + "\n")
            sys.stdout.flush()
        result = self._inner.info(msg, *args, **kwargs)
        if isinstance(msg, dict) and "train" in msg and self._hold_epoch is not None \
                and msg.get("epoch") == self._hold_epoch:
            # Once only: the interrupted trainer logs again while it saves its checkpoint, and a
            # second hold there would wait for a signal that never comes.
            self._hold_epoch = None
            sys.stdout.write(f"{HOLD_VAR}={msg.get('epoch')}: holding until stopped\n")
            sys.stdout.flush()
            # speculators' SIGINT/SIGTERM handler raises here, and the trainer stops as it would
            # in the middle of a step; a handler that only returns (a repeated signal) stops it too.
            signal.pause()
            raise KeyboardInterrupt(f"stopped while held by {HOLD_VAR}")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def patch_for_cpu() -> bool:
    # Deferred: torch and speculators take seconds to import and only the training subprocess needs them
    import torch

    import speculators.train.checkpointer as checkpointer
    import speculators.train.trainer as trainer

    trainer.metric_logger = _EchoLogger(trainer.metric_logger, _hold_epoch())
    if torch.accelerator.is_available():
        return False
    trainer.get_local_rank = lambda: "cpu"
    torch.accelerator.synchronize = lambda *args, **kwargs: None
    # The checkpointer imported the function by name: its own binding is the one it calls.
    checkpointer.get_current_device = lambda: "cpu"
    return True


def main(argv: list[str]) -> int:
    patch_for_cpu()
    # Deferred: speculators is heavy, and its CLI is imported only once the trainer is patched
    from speculators.train.cli import main as train_main
    from speculators.train.config import TrainConfig

    train_main(TrainConfig.resolve(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
