"""What a training run is asked to do: its settings, its steps and the files its data steps write."""

from __future__ import annotations

from typing import Any
from dataclasses import asdict, dataclass

from workbench.errors import DraftbenchError



SELF_PROMPTS = "self"  # the prompt source "written by the target itself"
STEPS = ("prompts", "responses", "prepare", "hidden_states", "train", "checkpoint", "register")
MANIFEST = "manifest.json"

CONCURRENCY = 8  # requests in flight while the target writes the responses


class TrainError(DraftbenchError):
    """A one-line reason the training pipeline cannot go on."""


class Cancelled(DraftbenchError):  # noqa: N818 - a signal, not an error
    """The run was asked to stop; finished steps stay recorded."""


@dataclass
class TrainConfig:
    target: str                      # a model folder or demo:NAME
    out: str                         # the output folder (absolute)
    prompts: str = "self"            # a Draftbench workload name, a prompt file, or "self"
    num_prompts: int = 48
    max_tokens: int = 128
    seq_length: int = 512
    epochs: int = 3
    lr: float = 1e-3
    draft_vocab_size: int = 4096
    speculator_type: str = "eagle3"
    layer_ids: list[int] | None = None   # default: speculators' [2, L//2, L-3]
    max_steps: int | None = None
    seed: int = 0
    name: str | None = None          # the catalog pair's name
    reuse: str | None = None         # another training folder whose data (up to hidden states) to reuse

    def key(self) -> dict[str, Any]:
        # What changes the data or the model; `max_steps` and `epochs` may grow on a rerun.
        d = asdict(self)
        for k in ("out", "max_steps", "epochs", "name", "reuse"):
            d.pop(k)
        return d


# The steps whose output depends on the data settings only, not on the kind of draft: a DFlash
# draft can be trained on the very files an EAGLE-3 run extracted (hidden states are the costly part).
DATA_STEPS = ("prompts", "responses", "prepare", "hidden_states")
DATA_FILES = ("prompts.jsonl", "responses.jsonl", "responses.partial.jsonl")
DATA_KEYS = ("target", "prompts", "num_prompts", "max_tokens", "seq_length", "seed")
