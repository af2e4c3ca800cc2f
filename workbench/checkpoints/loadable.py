"""Can the vLLM that serves load this pair at all? Breaks that depend on the serving vLLM's own
versions (not on the pair alone, which `compat` checks), said before anything is launched: a
server that dies at start costs minutes and says why only in its log."""

from __future__ import annotations

from typing import Any
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
# vLLM runs a Gemma 4 mixture-of-experts target (26B-A4B) on its V1 model runner, where the MTP
# assistant gets its own embedding (width 1024) instead of the target's (2816) and the engine stops
# at start: "a and b must have same reduction dim, but got [s, 3840] X [5632, 1024]"
# (vllm-project/vllm#48848: 0.21.0 served it, 0.25.1 did not; seen here on 0.26.0). The V2 runner
# shares the target's embedding (the proposed fix, vllm-project/vllm#51493, moves this target to it).
# No release with the fix is known, so later versions get a warning rather than silence.
MOE_MTP_BROKEN_FROM = (0, 25)
MOE_MTP_SEEN_UP_TO = (0, 26)
V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"


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


def assistant_method(draft: Checkpoint, speculative_config: dict[str, Any] | None) -> Verdict | None:
    """A Gemma 4 assistant draft whose --speculative-config does not say "method": "mtp"."""
    if draft.config.get("model_type") not in ASSISTANT_TYPES or not speculative_config:
        return None
    if speculative_config.get("method") == "mtp":
        return None
    return Verdict(ERROR, "assistant", f"{draft.name} is a Gemma 4 assistant ({draft.config.get('model_type')}), "
                   "which vLLM serves only with \"method\": \"mtp\" in --speculative-config, not "
                   f"{speculative_config.get('method')!r}; set method = \"mtp\"")


def is_moe(cp: Checkpoint) -> bool:
    text = cp.text()
    return bool(text.get("enable_moe_block")) or (text.get("num_experts") or 0) > 0


def gemma4_moe_mtp(target: Checkpoint, speculative_config: dict[str, Any] | None, vllm: ServingVllm,
                   env: dict[str, str]) -> Verdict | None:
    """A Gemma 4 mixture-of-experts target with MTP drafting on vLLM >= 0.25 without the V2 model
    runner: refused where the crash was seen (0.25, 0.26), a warning on later versions."""
    release = version_tuple(vllm.version)
    if (not is_gemma4(target) or not is_moe(target) or not speculative_config
            or speculative_config.get("method") != "mtp" or release is None
            or release[:2] < MOE_MTP_BROKEN_FROM or env.get(V2_RUNNER_ENV) == "1"):
        return None
    fix = f'set {V2_RUNNER_ENV} = "1" in the plan\'s [server] env'
    why = ("vLLM runs a Gemma 4 mixture-of-experts target on its V1 model runner, which feeds the MTP "
           "assistant its own embedding width and stops at start (vllm-project/vllm#48848)")
    if release[:2] <= MOE_MTP_SEEN_UP_TO:
        return Verdict(ERROR, "Gemma 4 MTP", f"{target.name} is a Gemma 4 mixture of experts and {vllm.where} has "
                       f"vLLM {vllm.version}: {why}; {fix}")
    return Verdict(WARNING, "Gemma 4 MTP", f"{target.name} is a Gemma 4 mixture of experts and {vllm.where} has "
                   f"vLLM {vllm.version}, which may still stop at start: {why}; if it does, {fix}")


def check(target: Checkpoint | None, draft: Checkpoint | None, speculative_config: dict[str, Any] | None,
          vllm: ServingVllm, env: dict[str, str] | None = None) -> list[Verdict]:
    """The verdicts on one server: what is not on disk is not checked here (compat says so)."""
    found = [gemma4_head_dim(target, vllm) if target is not None else None,
             assistant_method(draft, speculative_config) if draft is not None else None,
             gemma4_moe_mtp(target, speculative_config, vllm, env or {}) if target is not None else None]
    return [v for v in found if v is not None]
