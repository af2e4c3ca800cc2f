"""`python -m workbench.train.speculators_cpu ARGS...`: `speculators train ARGS...` that also runs on a
machine without an accelerator, and prints each metric record as one JSON line for Draftbench.

speculators 0.9.0 assumes an accelerator in exactly two places that matter on CPU; both are
patched here at run time (the installed package is left untouched):
  1. the trainer moves the model and every batch to `get_local_rank()`, an accelerator index
     (0 means cuda:0): on CPU it is the string "cpu" instead;
  2. its step timer calls `torch.accelerator.synchronize()`, which raises "Cannot access
     accelerator device when none is available": on CPU there is nothing to wait for.
With an accelerator present nothing is patched.
"""

from __future__ import annotations

import json
import sys

EVENT_PREFIX = "DRAFTBENCH_METRICS "


def _jsonable(obj):
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


class _EchoLogger:
    """Stands in for speculators' metric logger: forwards every record, and prints the metric
    dictionaries (train steps, validation epochs) as JSON lines on stdout."""

    def __init__(self, inner):
        self._inner = inner

    def info(self, msg, *args, **kwargs):
        if isinstance(msg, dict):
            sys.stdout.write(EVENT_PREFIX + json.dumps(_jsonable(msg)) + "\n")
            sys.stdout.flush()
        return self._inner.info(msg, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def patch_for_cpu() -> bool:
    # Deferred: torch and speculators take seconds to import and only the training subprocess needs them
    import torch

    import speculators.train.trainer as trainer

    trainer.metric_logger = _EchoLogger(trainer.metric_logger)
    if torch.accelerator.is_available():
        return False
    trainer.get_local_rank = lambda: "cpu"
    torch.accelerator.synchronize = lambda *args, **kwargs: None
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
