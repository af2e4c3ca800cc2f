"""Can the vLLM that serves load this pair at all? Breaks that depend on the serving vLLM's own
versions (not on the pair alone, which `compat` checks), said before anything is launched: a
server that dies at start costs minutes and says why only in its log."""

from __future__ import annotations

from workbench.checkpoints.compat import ERROR, WARNING, Checkpoint, Verdict
from workbench.host.serving import ServingVllm, version_tuple

# transformers 5.14 made Gemma 4's head_dim a per-layer attribute; vLLM up to 0.27 reads it as one
# global value and stops at start. Fixed in vLLM 0.28 (vllm-project/vllm#49797).
GEMMA4_TYPES = ("gemma4", "gemma4_text")
GEMMA4_FIXED_VLLM = (0, 28)
GEMMA4_BREAKING_TRANSFORMERS = (5, 14)
GEMMA4_FIX = "vLLM >= 0.28 or transformers 5.13"
# A Gemma 4 assistant drafts from its target's KV cache: vLLM serves it only as "mtp".
ASSISTANT_TYPES = ("gemma4_assistant", "gemma4_unified_assistant")


def is_gemma4(cp: Checkpoint) -> bool:
    """A Gemma 4 model (its assistant drafts are checked apart): model_type or architectures say so."""
    types = {cp.config.get("model_type"), cp.text().get("model_type")}
    archs = cp.config.get("architectures") or []
    if types & set(ASSISTANT_TYPES):
        return False
    return bool(types & set(GEMMA4_TYPES)) or any(str(a).startswith("Gemma4") for a in archs)


def gemma4_head_dim(target: Checkpoint, vllm: ServingVllm) -> Verdict | None:
    """Gemma 4 on vLLM <= 0.27 with transformers >= 5.14: refused (a warning where the serving
    vLLM's transformers could not be asked)."""
    release = version_tuple(vllm.version)
    if not is_gemma4(target) or release is None or release[:2] >= GEMMA4_FIXED_VLLM:
        return None
    why = ("transformers 5.14 and later make Gemma 4's head_dim a per-layer attribute that vLLM 0.27 and "
           "earlier read as one global value (fixed in vLLM 0.28, vllm-project/vllm#49797)")
    transformers = version_tuple(vllm.transformers)
    if transformers is None:
        return Verdict(WARNING, "Gemma 4", f"{target.name} is a Gemma 4 model and {vllm.where} has vLLM "
                       f"{vllm.version}, whose transformers could not be asked: {why}; if it is 5.14 or later the "
                       f"server stops at start, so use {GEMMA4_FIX}")
    if transformers[:2] < GEMMA4_BREAKING_TRANSFORMERS:
        return None
    return Verdict(ERROR, "Gemma 4", f"{target.name} is a Gemma 4 model and {vllm.where} has vLLM {vllm.version} "
                   f"with transformers {vllm.transformers}, which cannot load it: {why}; use {GEMMA4_FIX}")


def assistant_method(draft: Checkpoint, speculative_config: dict | None) -> Verdict | None:
    """A Gemma 4 assistant draft whose --speculative-config does not say "method": "mtp"."""
    if draft.config.get("model_type") not in ASSISTANT_TYPES or not speculative_config:
        return None
    if speculative_config.get("method") == "mtp":
        return None
    return Verdict(ERROR, "assistant", f"{draft.name} is a Gemma 4 assistant ({draft.config.get('model_type')}), "
                   "which vLLM serves only with \"method\": \"mtp\" in --speculative-config, not "
                   f"{speculative_config.get('method')!r}; set method = \"mtp\"")


def check(target: Checkpoint | None, draft: Checkpoint | None, speculative_config: dict | None,
          vllm: ServingVllm) -> list[Verdict]:
    """The verdicts on one server: what is not on disk is not checked here (compat says so)."""
    found = [gemma4_head_dim(target, vllm) if target is not None else None,
             assistant_method(draft, speculative_config) if draft is not None else None]
    return [v for v in found if v is not None]
