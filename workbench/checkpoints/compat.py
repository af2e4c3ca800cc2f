"""Will this draft work with this target? Answered from config.json and safetensors headers only
(no weights loaded), before any server starts, with one sentence per verdict."""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from workbench import methods
from workbench.errors import DraftbenchError

OK, WARNING, ERROR = "ok", "warning", "error"
# Where vLLM's EAGLE-3 takes the target's hidden states when the draft names no layers.
EAGLE3_DEFAULT_LAYERS = 3
# vLLM rewrites the method from the draft's path unless it is one of these (see VLLM.md).
PATH_HINTS = (("eagle-", "eagle"), ("eagle3", "eagle3"), ("dflash", "dflash"), ("dspark", "dspark"))
EXPLICIT_ONLY = ("eagle", "eagle3", "dflash", "dspark")


@dataclass(frozen=True)
class Verdict:
    level: str   # ok, warning or error
    check: str   # what was checked, in a few words
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.check}: {self.message}"


@dataclass(frozen=True)
class Checkpoint:
    """What config.json and the safetensors headers say about one model folder."""
    ref: str
    config: dict[str, Any]
    tensors: dict[str, tuple[str, list[int]]]  # name -> (dtype, shape)

    @property
    def name(self) -> str:
        return self.ref.rstrip("/").rsplit("/", 1)[-1]

    def text(self) -> dict[str, Any]:
        """The language-model part: `text_config` for multimodal and Gemma 4 configs,
        `transformer_layer_config` for speculators-format ones."""
        c = self.config
        return c.get("text_config") or c.get("transformer_layer_config") or c

    def get(self, key: str) -> Any:
        return self.config.get(key, self.text().get(key))


class CompatError(DraftbenchError, ValueError):
    """A checkpoint whose config cannot be read."""


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a .safetensors file: 8 bytes little-endian length, then that much JSON."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise CompatError(f"{path.name} is too short to be a safetensors file")
        (length,) = struct.unpack("<Q", head)
        if length > 100 * 1024 * 1024:
            raise CompatError(f"{path.name} has an implausible safetensors header ({length} bytes)")
        try:
            return json.loads(f.read(length))
        except ValueError:
            raise CompatError(f"{path.name} has a damaged safetensors header") from None


def safetensors_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def read_tensors(folder: Path) -> dict[str, tuple[str, list[int]]]:
    tensors = {}
    for f in safetensors_files(folder):
        for name, meta in read_safetensors_header(f).items():
            if name != "__metadata__":
                tensors[name] = (meta["dtype"], meta["shape"])
    return tensors


def local_folder(ref: str) -> Path | None:
    """A model folder on disk: the ref itself, or its snapshot in the Hugging Face cache."""
    path = Path(ref).expanduser()
    if (path / "config.json").is_file():
        return path
    # Deferred: hub_api imports huggingface_hub and httpx, which this module otherwise does without
    from workbench.checkpoints import hub_api

    if not hub_api.REPO_ID.match(ref):
        return None
    # Deferred: huggingface_hub is slow to import and only a Hub id needs it
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(ref, "config.json", cache_dir=hub_api.cache_dir())
    return Path(found).parent if isinstance(found, str) else None


def load(ref: str) -> Checkpoint | None:
    folder = local_folder(ref)
    if folder is None:
        return None
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise CompatError(f"cannot read {ref}'s config.json: {exc}") from None
    return Checkpoint(ref, config, read_tensors(folder))


# --- what the checkpoint is -------------------------------------------------------------------------
def detected_method(draft: Checkpoint) -> str | None:
    """The method the draft's own config declares, as vLLM reads it."""
    c = draft.config
    if "speculators_config" in c:
        kind = c.get("speculators_model_type")
        aliases: dict[str | None, str] = {"peagle": "eagle3", "dflash2": "dflash"}
        return aliases.get(kind, kind)
    if c.get("model_type") in ("gemma4_assistant", "gemma4_unified_assistant"):
        return "mtp"
    archs = " ".join(c.get("architectures") or [])
    if "DFlash" in archs or "dflash_config" in c:
        return "dflash"
    if "DSpark" in archs:
        return "dspark"
    if "Eagle3" in archs or "eagle3" in archs.lower():
        return "eagle3"
    if c.get("model_type") in ("eagle", "medusa", "mlp_speculator"):
        return c["model_type"]
    return None


def path_override(method: str, draft_ref: str) -> str | None:
    """The method vLLM switches to from the draft's path when the chosen one is not explicit-only."""
    if method in EXPLICIT_ONLY:
        return None
    lower = draft_ref.lower()
    for hint, becomes in PATH_HINTS:
        if hint in lower and becomes != method:
            return becomes
    return None


def num_layers(target: Checkpoint) -> int | None:
    return target.get("num_hidden_layers")


def _aux_layers(draft: Checkpoint) -> list[int] | None:
    for where in (draft.config, draft.text(), draft.config.get("eagle_config") or {}):
        ids = where.get("eagle_aux_hidden_state_layer_ids")
        if ids:
            return list(ids)
    return None


def _dflash_layers(draft: Checkpoint) -> list[int] | None:
    if "speculators_config" in draft.config and draft.config.get("aux_hidden_state_layer_ids"):
        return [i - 1 for i in draft.config["aux_hidden_state_layer_ids"]]  # speculators count from 1
    ids = (draft.config.get("dflash_config") or {}).get("target_layer_ids") or draft.config.get("target_layer_ids")
    return list(ids) if ids else None


def _block_size(draft: Checkpoint) -> int | None:
    for key in ("block_size", "dspark_block_size"):
        for where in (draft.config, draft.config.get("dflash_config") or {}, draft.text()):
            if isinstance(where.get(key), int):
                return where[key]
    m = re.search(r"(?:[-_]b|block)(\d+)$", draft.name.lower())
    return int(m.group(1)) if m else None


def _fc_in(draft: Checkpoint) -> int | None:
    for name, (_, shape) in draft.tensors.items():
        if re.search(r"(^|\.)fc\.weight$", name) and len(shape) == 2:
            return shape[1]
    return None


# --- the checks -------------------------------------------------------------------------------------------
def check(method: str, n: int | None, target: Checkpoint, draft: Checkpoint | None,
          max_model_len: int | None = None) -> list[Verdict]:
    method = methods.get(method).name
    out: list[Verdict] = []
    if draft is not None:
        out += _method(method, draft)
        out += _sizes(method, target, draft)
    if method == "eagle3" and draft is not None:
        out += _eagle3_layers(target, draft)
    if method in ("dflash", "dspark") and draft is not None:
        out += _block(method, n, target, draft)
    if method == "mtp":
        out += _mtp(n, target, draft)
    if draft is not None and "speculators_config" in draft.config:
        out += _verifier(target, draft)
    if method == "draft_model" and draft is not None and max_model_len:
        limit = draft.get("max_position_embeddings")
        if isinstance(limit, int) and max_model_len > limit:
            out.append(Verdict(ERROR, "context length", f"max_model_len={max_model_len} is longer than the draft "
                               f"{draft.name} supports ({limit} positions); lower max_model_len"))
    return out


def _method(method: str, draft: Checkpoint) -> list[Verdict]:
    declared = detected_method(draft)
    override = path_override(method, draft.ref)
    if declared and declared != method:
        return [Verdict(ERROR, "method", f"{draft.name} is a {declared} checkpoint (from its config.json), but the "
                        f"plan serves it as {method}; set method = \"{declared}\"")]
    if override:
        return [Verdict(ERROR, "method", f"vLLM would serve {draft.name} as {override}, not {method}: its path "
                        f"contains \"{override}\", which overrides the method; rename the folder or choose {override}")]
    if method in ("eagle3", "dflash", "dspark") and declared is None:
        return [Verdict(ERROR, "method", f"{draft.name} looks like an ordinary language model, not a {method} "
                        f"drafter; use method = \"draft_model\" for it")]
    return [Verdict(OK, "method", f"{draft.name} is served as {method}, as its config declares"
                    if declared else f"{draft.name} is an ordinary language model, served as {method}")]


def _vocab(cp: Checkpoint) -> int | None:
    v = cp.get("vocab_size")
    if v is None:
        for name, (_, shape) in cp.tensors.items():
            if name.endswith("embed_tokens.weight"):
                return shape[0]
    return v


def _hidden(target: Checkpoint) -> int | None:
    return target.get("hidden_size")


def _sizes(method: str, target: Checkpoint, draft: Checkpoint) -> list[Verdict]:
    out = []
    tv, dv = _vocab(target), _vocab(draft)
    if tv and dv:
        if tv != dv:
            out.append(Verdict(ERROR, "vocabulary", f"the draft's vocabulary has {dv} tokens and the target's {tv}: "
                               "they must share one tokenizer, so this draft cannot serve this target"))
        else:
            out.append(Verdict(OK, "vocabulary", f"draft and target share a {tv}-token vocabulary"))
    th = _hidden(target)
    if method in ("eagle3", "dflash", "dspark"):
        dh = draft.get("target_hidden_size") or draft.get("hidden_size")
        fc = _fc_in(draft)
        if th and fc and fc % th:
            out.append(Verdict(ERROR, "hidden size", f"the draft's input layer takes {fc} features, not a multiple "
                               f"of the target's hidden size {th}: it was trained for another target"))
        elif th and dh and dh != th and not fc:
            out.append(Verdict(ERROR, "hidden size", f"the draft expects the target's hidden states to have {dh} "
                               f"features, but this target has {th}: it was trained for another target"))
        elif th:
            out.append(Verdict(OK, "hidden size", f"the draft reads the target's {th}-wide hidden states"))
    if method == "mtp" and draft.config.get("model_type", "").startswith("gemma4"):
        backbone = draft.config.get("backbone_hidden_size")
        if th and backbone and backbone != th:
            out.append(Verdict(ERROR, "hidden size", f"the assistant was built for a target with hidden size "
                               f"{backbone}, but this target has {th}"))
        if not target.config.get("model_type", "").startswith("gemma4"):
            out.append(Verdict(ERROR, "assistant", f"{draft.name} is a Gemma 4 assistant: it reuses its target's "
                               "KV cache and only works with a Gemma 4 target"))
        elif draft.name.lower().removesuffix("-assistant") != target.name.lower():
            out.append(Verdict(WARNING, "assistant", f"{draft.name} was trained for "
                               f"{draft.name.removesuffix('-assistant')}, not {target.name}; expect low acceptance"))
        else:
            out.append(Verdict(OK, "assistant", f"{draft.name} is the assistant published for {target.name}"))
    return out


def _eagle3_layers(target: Checkpoint, draft: Checkpoint) -> list[Verdict]:
    layers = num_layers(target)
    ids = _aux_layers(draft)
    if ids is None:
        return [Verdict(OK, "EAGLE-3 layers", "the draft names no auxiliary layers; vLLM takes the target's default "
                        "three (early, middle, late)")]
    if layers is not None and any(not 0 <= i < layers for i in ids):
        return [Verdict(ERROR, "EAGLE-3 layers", f"the draft reads the target's layers {ids}, but the target has "
                        f"only {layers} (0..{layers - 1}): it was trained for a deeper model")]
    return [Verdict(OK, "EAGLE-3 layers", f"auxiliary layers {ids} all exist in the target's {layers}")]


def _block(method: str, n: int | None, target: Checkpoint, draft: Checkpoint) -> list[Verdict]:
    out = []
    layers = num_layers(target)
    ids = _dflash_layers(draft)
    if ids and layers is not None:
        bad = [i for i in ids if not 0 <= i < layers]
        if bad:
            out.append(Verdict(ERROR, "target layers", f"the drafter reads the target's layers {ids}, but the target "
                               f"has only {layers}: it was trained for another target"))
        else:
            out.append(Verdict(OK, "target layers", f"context layers {ids} all exist in the target's {layers}"))
    trained_for = draft.config.get("num_target_layers")
    if isinstance(trained_for, int) and layers is not None and trained_for != layers:
        out.append(Verdict(WARNING, "target layers", f"the drafter was trained on a {trained_for}-layer target; "
                           f"this one has {layers}"))
    block = _block_size(draft)
    if block is not None and n is not None:
        limit = block - 1 if method == "dflash" else block
        if n > limit:
            out.append(Verdict(ERROR, "block size", f"N={n} does not fit the drafter's block of {block}: "
                               f"at most {limit} tokens per step"))
        else:
            out.append(Verdict(OK, "block size", f"N={n} fits the drafter's block of {block}"))
    return out


def _mtp(n: int | None, target: Checkpoint, draft: Checkpoint | None) -> list[Verdict]:
    if draft is not None:
        if draft.config.get("model_type", "").startswith("gemma4"):
            return []
        return [Verdict(ERROR, "MTP", f"{draft.name} is not a Gemma 4 assistant; native MTP takes no draft")]
    n_predict = (target.get("num_nextn_predict_layers") or target.get("mtp_num_hidden_layers")
                 or target.get("num_mtp_modules"))
    if not n_predict:
        return [Verdict(ERROR, "MTP", f"{target.name} has no MTP layers (no num_nextn_predict_layers in its "
                        "config.json): native MTP needs a target trained with them")]
    if n is not None and n > n_predict and n % n_predict:
        return [Verdict(ERROR, "MTP", f"N={n} must be a multiple of the target's {n_predict} MTP layers")]
    if n is not None and n > n_predict:
        return [Verdict(WARNING, "MTP", f"N={n} reruns the target's {n_predict} MTP layer(s); acceptance "
                        "usually falls after the first position")]
    return [Verdict(OK, "MTP", f"the target carries {n_predict} MTP layer(s)")]


def _verifier(target: Checkpoint, draft: Checkpoint) -> list[Verdict]:
    verifier = ((draft.config.get("speculators_config") or {}).get("verifier") or {}).get("name_or_path")
    if not verifier:
        return [Verdict(WARNING, "verifier", f"{draft.name} is in speculators format but names no verifier")]
    if verifier.startswith(("/", ".", "~")):
        return [Verdict(WARNING, "verifier", f"{draft.name} names a local path as its verifier ({verifier}); "
                        "vLLM 0.33 accepts only Hub repo ids there when the draft is served as --model")]
    if verifier.lower() != target.ref.lower() and verifier.rsplit("/", 1)[-1].lower() != target.name.lower():
        return [Verdict(WARNING, "verifier", f"{draft.name} was trained against {verifier}, not {target.ref}; "
                        "expect lower acceptance")]
    return [Verdict(OK, "verifier", f"{draft.name} was trained against this target ({verifier})")]


# --- a whole plan -------------------------------------------------------------------------------------------
# The plan package sits above this one in the layers: a plan is read here by the fields the check uses.
class PlanServer(Protocol):
    """A plan's server: the pair it serves and how."""

    @property
    def method(self) -> str: ...

    @property
    def n(self) -> int | None: ...

    @property
    def target(self) -> str: ...

    @property
    def draft(self) -> str | None: ...

    @property
    def max_model_len(self) -> int: ...


class PlanServers(Protocol):
    """A plan: its servers, each with the runs it serves."""

    def servers(self) -> Sequence[tuple[PlanServer, Sequence[object]]]: ...


def for_plan(p: PlanServers) -> list[tuple[str, Verdict]]:
    """Every server's verdicts, labelled by method and N; configs that are not on disk yet are said so."""
    out: list[tuple[str, Verdict]] = []
    cache: dict[str, Checkpoint | None] = {}

    def get(ref: str) -> Checkpoint | None:
        if ref not in cache:
            cache[ref] = load(ref)
        return cache[ref]

    for server, _ in p.servers():
        if server.method in ("baseline", "ngram", "suffix"):
            continue
        label = f"{server.method} N={server.n}" + (f" ({Path(server.draft).name})" if server.draft else "")
        try:
            target = get(server.target)
            draft = get(server.draft) if server.draft else None
        except CompatError as exc:
            out.append((label, Verdict(ERROR, "config", str(exc))))
            continue
        missing = [ref for ref, cp in ((server.target, target), (server.draft, draft)) if ref and cp is None]
        if missing:
            out.append((label, Verdict(WARNING, "not checked", f"{missing[0]} is not downloaded yet, so it could "
                                       f"not be checked (`draftbench pull {missing[0]}` fetches it)")))
            continue
        assert target is not None  # a server always names its target: when not on disk, it is missing
        out += [(label, v) for v in check(server.method, server.n, target, draft, server.max_model_len)]
    return out
