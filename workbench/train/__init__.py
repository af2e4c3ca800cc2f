"""Training a speculator (EAGLE-3) for a target, as resumable steps in one output folder.

prompts -> responses (the target's own, from a vLLM server started here) -> prepare (speculators
prepare-data) -> hidden states (transformers forward hooks, the file layout speculators reads) ->
train (speculators, in a subprocess) -> checkpoint (absolute verifier path) -> register (user
catalog pair and an evaluation plan).

`manifest.json` in the folder records the configuration and each finished step; a rerun skips the
finished steps, so a cancelled run resumes where it stopped. Every file is written under a
temporary name and renamed when complete, so a cancel never leaves a half-written file in use.
"""

from workbench.train.config import (CONCURRENCY, DATA_FILES, DATA_KEYS, DATA_STEPS, MANIFEST, SELF_PROMPTS, STEPS,
                                    Cancelled, TrainConfig, TrainError)
from workbench.train.pipeline import Pipeline
from workbench.train.records import LossCurve, best_checkpoint, folder_state, loss_of, position_accuracy

__all__ = ["CONCURRENCY", "DATA_FILES", "DATA_KEYS", "DATA_STEPS", "MANIFEST", "SELF_PROMPTS", "STEPS", "Cancelled",
           "LossCurve", "Pipeline", "TrainConfig", "TrainError", "best_checkpoint", "folder_state", "loss_of",
           "position_accuracy"]
