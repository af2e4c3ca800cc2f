"""Acceptance alarms: what in a run's counters says its MAL should not be trusted as it stands
(pure, no I/O). The runner stores them with the run and sends each as an event; `show` prints them.

vLLM's counters, summed over engines: every verification step of a request counts one draft
(`spec_decode_num_drafts`) and the draft tokens the target accepted in it
(`spec_decode_num_accepted_tokens`); it commits those plus one token of its own. The first token of
a request comes from its prefill, with nothing drafted. So over a window of whole requests

    generation_tokens = requests + drafts + accepted - (accepted tokens never emitted)

and the tokens emitted per step, (generation_tokens - requests) / drafts, is the MAL the counters
claim, 1 + accepted / drafts, unless vLLM counted accepted tokens that were cut off: past an EOS,
a stop string or max_tokens in a request's last step (vllm issue 56101). Model-free drafters (n-gram,
suffix decoding) skip steps where they find nothing to propose, which breaks the identity, so the
check is made for model-based drafters only.
"""

from __future__ import annotations

from typing import Any
import json
from dataclasses import asdict, dataclass

from workbench import methods, store

COLLAPSED = "collapsed"
MAL_DROP = "mal_drop"
OVERCOUNT = "overcount"

COLLAPSED_MAL = 1.05
DROP_SHARE = 1 / 3
OVERCOUNT_SHARE = 0.02
# Fewer drafts than this (in the window, or in either half of it) say too little to alarm on.
MIN_DRAFTS = 20


@dataclass(frozen=True)
class Alarm:
    kind: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def model_based(method: str) -> bool:
    """A drafter with weights of its own (draft model, MTP, EAGLE-3, DFlash, DSpark), which drafts
    at every step; n-gram lookup and suffix decoding draft only where they find a match."""
    try:
        m = methods.get(method)
    except methods.MethodError:
        return False
    return m.name != "baseline" and m.draft != "none"


def collapsed(method: str, drafts: float | None, accepted: float | None) -> Alarm | None:
    if not model_based(method) or not drafts or drafts < MIN_DRAFTS or accepted is None:
        return None
    mal = 1 + accepted / drafts
    if mal >= COLLAPSED_MAL:
        return None
    return Alarm(COLLAPSED, f"acceptance collapsed: every draft rejected — check the drafter/kernels "
                            f"(MAL {mal:.3f} over {drafts:.0f} drafts, under {COLLAPSED_MAL})")


def halves(samples: list[tuple[float, float, float]]) -> tuple[float, float] | None:
    """MAL over the first and the second half of a window, from its cumulative samples (seconds
    into the window, drafts, accepted; the last one the window's end): split at the sample nearest
    the middle. None where either half drafted too little to tell."""
    samples = sorted(s for s in samples if s[1] is not None and s[2] is not None)
    if len(samples) < 2:
        return None
    t_end, d_end, a_end = samples[-1]
    _, d_mid, a_mid = min(samples[:-1], key=lambda s: abs(s[0] - t_end / 2))
    if d_mid < MIN_DRAFTS or d_end - d_mid < MIN_DRAFTS:
        return None
    return 1 + a_mid / d_mid, 1 + (a_end - a_mid) / (d_end - d_mid)


def mal_drop(samples: list[tuple[float, float, float]]) -> Alarm | None:
    found = halves(samples)
    if found is None:
        return None
    first, second = found
    if first - second <= DROP_SHARE * first:
        return None
    return Alarm(MAL_DROP, f"MAL fell by more than a third during the run: {first:.2f} in its first half, "
                           f"{second:.2f} in its second")


def emitted_mal(generation_tokens: float, requests: float, drafts: float) -> float | None:
    """Tokens emitted per verification step: what vLLM's MAL means, from the generation counter."""
    return (generation_tokens - requests) / drafts if drafts else None


def overcount(method: str, drafts: float | None, accepted: float | None, generation_tokens: float | None,
              requests: float | None) -> Alarm | None:
    if (not model_based(method) or not drafts or drafts < MIN_DRAFTS or accepted is None
            or generation_tokens is None or not requests):
        return None
    counted = 1 + accepted / drafts
    emitted = emitted_mal(generation_tokens, requests, drafts)  # not None: there are drafts
    if emitted is None or abs(counted - emitted) <= OVERCOUNT_SHARE * emitted:
        return None
    extra = requests + drafts + accepted - generation_tokens
    return Alarm(OVERCOUNT, f"MAL from the accepted-token counter is {counted:.3f}, but the tokens emitted per draft "
                            f"step are {emitted:.3f} ({100 * abs(counted - emitted) / emitted:.1f} % apart, "
                            f"{extra:.0f} accepted tokens never emitted): vLLM counts drafts accepted past "
                            f"an answer's end (EOS, stop or max_tokens; vllm issue 56101), most in short answers")


def check(method: str, drafts: float | None, accepted: float | None, generation_tokens: float | None,
          requests: float | None, samples: list[tuple[float, float, float]], imposed: bool = False) -> list[Alarm]:
    """Every alarm a run's window raises. A what-if run's acceptance is imposed, not the drafter's,
    so only the counter check applies to it."""
    found = [] if imposed else [collapsed(method, drafts, accepted), mal_drop(samples)]
    found.append(overcount(method, drafts, accepted, generation_tokens, requests))
    return [a for a in found if a is not None]


def of_row(row: store.RunRecord, samples: list[tuple[float, float, float]]) -> list[Alarm]:
    """The alarms of a stored run: its stored ones, or (a run stored before alarms were) those its
    stored figures and samples raise, with the client's request count standing for the counter's."""
    if row.alarms is not None:
        return [Alarm(**a) for a in decode(row.alarms)]
    requests = (row.requests_ok or 0) + (row.requests_failed or 0)
    return check(row.method or "", row.drafts, row.accepted, row.generation_tokens,
                 requests or None, samples, imposed=bool(row.what_if))


def encode(alarms: list[Alarm]) -> str:
    """The run's `alarms` column: a JSON list, empty when none was raised (NULL: never checked)."""
    return json.dumps([a.to_json() for a in alarms])


def decode(text: str | None) -> list[dict[str, Any]]:
    return json.loads(text) if text else []
