"""Drafting methods and how each becomes vLLM's `--speculative-config` (pure, no processes)."""

from __future__ import annotations

from typing import Any
import json
from dataclasses import dataclass

from workbench.errors import DraftbenchError


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    draft: str  # "required", "optional" or "none"
    parallel: bool  # one draft pass serves all N positions (block drafters)
    max_n: int | None = None
    needs_package: str | None = None  # a module the vLLM environment must have
    install: str | None = None  # the pip requirement that provides it
    allowed_options: frozenset[str] = frozenset()
    doc: str = ""


COMMON_OPTIONS = frozenset({"draft_tensor_parallel_size", "max_model_len", "disable_padded_drafter_batch"})

METHODS: dict[str, Method] = {m.name: m for m in (
    Method("baseline", "No speculation", "none", False, doc="The reference every speedup is measured against."),
    Method("ngram", "N-gram (prompt lookup)", "none", False,
           allowed_options=frozenset({"prompt_lookup_min", "prompt_lookup_max"}),
           doc="Proposes continuations found in the prompt; no weights."),
    Method("draft_model", "Draft model", "required", False, allowed_options=COMMON_OPTIONS,
           doc="A small LM with the target's vocabulary drafts N tokens one at a time."),
    Method("suffix", "Suffix decoding", "none", False, needs_package="arctic_inference", install="arctic-inference",
           allowed_options=frozenset({"suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
                                      "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob"}),
           doc="Suffix trees over the prompt and earlier outputs; repeats accept more."),
    Method("mtp", "MTP (native or Gemma 4 assistant)", "optional", False, allowed_options=COMMON_OPTIONS,
           doc="Multi-token prediction heads inside the target, or a Gemma 4 assistant checkpoint."),
    Method("eagle3", "EAGLE-3", "required", False,
           allowed_options=COMMON_OPTIONS | {"parallel_drafting"},
           doc="A light head on the target's hidden states; `parallel_drafting` gives P-EAGLE."),
    Method("dflash", "DFlash", "required", True, max_n=15, allowed_options=COMMON_OPTIONS,
           doc="A block drafter: one pass drafts the whole block (block 16 allows N <= 15)."),
    Method("dspark", "DSpark", "optional", True, allowed_options=COMMON_OPTIONS,
           doc="A block drafter (DeepSeek-V4 ships it inside the target); Model Runner V2 only."),
)}

# vLLM's config names for methods users often type differently.
ALIASES = {"none": "baseline", "eagle": "eagle3", "draft": "draft_model", "prompt_lookup": "ngram"}


def unavailable(method: str, modules: set[str], python: str = "python") -> str | None:
    """Why a method cannot run in a vLLM environment that has `modules`, with the command that
    installs what it needs; None when it can."""
    m = get(method)
    if not m.needs_package or m.needs_package in modules:
        return None
    return (f"needs the {m.needs_package} package in the vLLM environment: "
            f"{python} -m pip install {m.install or m.needs_package}")


class MethodError(DraftbenchError, ValueError):
    """A one-line reason a method configuration cannot be served."""


def get(name: str) -> Method:
    key = ALIASES.get(name, name)
    if key not in METHODS:
        raise MethodError(f"unknown method {name!r}: choose one of {', '.join(METHODS)}")
    return METHODS[key]


def speculative_config(method: str, n: int | None, draft: str | None = None,
                       options: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The `--speculative-config` dict; None for the baseline. `method` is always explicit,
    because vLLM's auto-detection from the draft path can override the intended method."""
    m = get(method)
    options = dict(options or {})
    if m.name == "baseline":
        if n or draft or options:
            raise MethodError("the baseline takes no N, draft or options")
        return None
    if n is None or n < 1:
        raise MethodError(f"{m.name}: N (num_speculative_tokens) must be a whole number >= 1, not {n}")
    if m.max_n is not None and n > m.max_n:
        raise MethodError(f"{m.name}: N={n} exceeds the block drafter's limit of {m.max_n}")
    if m.draft == "required" and not draft:
        raise MethodError(f"{m.name} needs a draft checkpoint (`draft = ...`)")
    if m.draft == "none" and draft:
        raise MethodError(f"{m.name} takes no draft checkpoint")
    unknown = sorted(set(options) - m.allowed_options)
    if unknown:
        raise MethodError(f"{m.name}: unknown option {unknown[0]!r}; allowed: {', '.join(sorted(m.allowed_options)) or 'none'}")
    if m.name == "ngram":
        lo, hi = options.get("prompt_lookup_min"), options.get("prompt_lookup_max")
        if lo is not None and hi is not None and lo > hi:
            raise MethodError(f"ngram: prompt_lookup_min={lo} must be <= prompt_lookup_max={hi}")
    config: dict[str, Any] = {"method": m.name, "num_speculative_tokens": n}
    if draft:
        config["model"] = draft
    config.update(options)
    return config


# vLLM's SpeculativeConfig.draft_sample_method when the config leaves it out: drafts take the
# draft's argmax, treated as one-hot in rejection sampling ("probabilistic" samples them instead).
DEFAULT_DRAFT_SAMPLE_METHOD = "greedy"


def draft_sample_method(config: dict[str, Any] | None) -> str | None:
    """How the server samples drafts for this `--speculative-config`: its own
    `draft_sample_method`, else vLLM's default; None where no model drafts (the baseline, n-gram
    and suffix decoding look drafts up)."""
    if config is None or get(config["method"]).draft == "none":
        return None
    return str(config.get("draft_sample_method", DEFAULT_DRAFT_SAMPLE_METHOD))


def speculative_args(config: dict[str, Any] | None) -> list[str]:
    if config is None:
        return []
    return ["--speculative-config", json.dumps(config, separators=(",", ":"))]
