"""The lossless check: does a speculative run answer as its baseline does? (pure: no I/O)

Greedy speculative decoding is meant to be lossless: at temperature 0 the verifier keeps exactly
the tokens the target alone would have chosen, so a speculative run's answers should be the
baseline's, token for token. A broken build does not say so: on ROCm a drafter whose every draft
was rejected, an MTP head that took GSM8K accuracy from 97 % to 2 %, acceptance of 1.02 with
gibberish output all looked like ordinary runs. Answers are compared per request (the same
prompt at the same place of the same sample), as the share identical and the median common prefix
(as a share of the baseline's answer, so that long and short answers weigh alike); where the
workload grades its answers (workbench.load.grade), both runs' accuracy and the answers that turned
from right to wrong.

A healthy run need not be 100 % identical: a speculative step verifies N+1 tokens of a request
at once, which rounds differently from one token at a time (in bf16 most of all), and where two
tokens' logits nearly tie the answers part ways and stay parted. They part late, though: on the
demo sweep (bf16, vLLM's CPU build) healthy runs had as few as 2 of 8 answers identical at c = 1,
but a median common prefix of at least 76 % of the baseline's answer. A broken verifier parts at
once. So a run is flagged when its median common prefix is under PREFIX_MIN or almost no answer is
identical (IDENTICAL_MIN); both sit well below what healthy runs scored (docs/reliability.md).
"""

from __future__ import annotations

from typing import Any
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from workbench import store

# Below these a speculative run is flagged. Healthy CPU runs of the demo sweep scored at least
# 25 % identical answers and a 76 % median common prefix (docs/reliability.md).
IDENTICAL_MIN = 0.1
PREFIX_MIN = 0.5
# A drop in accuracy is beyond the noise when the answers that turned wrong outnumber those that
# turned right by more than chance allows: a one-sided sign test on the discordant pairs.
ACCURACY_P = 0.05
# Rows of one configuration must agree in these (besides the method) to be compared: the same
# prompts, asked the same way, at the same load.
SAME = ("experiment_id", "target", "workload", "concurrency", "request_rate", "num_prompts", "max_tokens",
        "temperature", "top_p", "ignore_eos")

Answers = dict[tuple[int, str], tuple[str, bool | None]]  # (idx, prompt_id) -> (text, correct)


@dataclass(frozen=True)
class Check:
    """One speculative run against its baseline."""
    baseline: int          # the baseline run's id
    compared: int          # answers present in both
    identical: int
    prefix_share: float    # median over compared answers of common prefix / baseline answer length
    turned_wrong: int      # graded right in the baseline, wrong here
    turned_right: int

    @property
    def identical_share(self) -> float:
        return self.identical / self.compared if self.compared else 0.0


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def compare(baseline_id: int, base: Answers, spec: Answers) -> Check | None:
    keys = sorted(base.keys() & spec.keys())
    if not keys:
        return None
    shares, identical, wrong, right = [], 0, 0, 0
    for k in keys:
        (a, ok_a), (b, ok_b) = base[k], spec[k]
        identical += a == b
        shares.append(common_prefix(a, b) / len(a) if a else float(a == b))
        if ok_a is not None and ok_b is not None:
            wrong += ok_a and not ok_b
            right += ok_b and not ok_a
    return Check(baseline_id, len(keys), identical, statistics.median(shares), wrong, right)


def accuracy(answers: Answers) -> tuple[float | None, int]:
    """The share of graded answers that are right, and how many were graded."""
    graded = [ok for _, ok in answers.values() if ok is not None]
    return (sum(graded) / len(graded) if graded else None), len(graded)


def sign_test_p(turned_wrong: int, turned_right: int) -> float:
    """P(at least `turned_wrong` of the discordant pairs fall on the wrong side | no change)."""
    n = turned_wrong + turned_right
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(turned_wrong, n + 1)) / 2 ** n


def checkable(row: store.RunRecord) -> bool:
    """Greedy runs with measured answers: a what-if run (dummy weights, an imposed acceptance
    through a synthetic sampler) is not lossless by construction."""
    return (row.status == "completed" and row.temperature == 0 and not row.what_if)


def baseline_for(row: store.RunRecord, rows: list[store.RunRecord]) -> store.RunRecord | None:
    """The completed baseline run this speculative run is checked against: the same experiment,
    workload, load and sampling, the same repeat when there is one (the same prompts)."""
    if row.method == "baseline" or not checkable(row):
        return None
    same = [b for b in rows if b.method == "baseline" and checkable(b)
            and all(getattr(b, k) == getattr(row, k) for k in SAME)]
    same.sort(key=lambda b: (b.repeat != row.repeat, b.id))
    return same[0] if same else None


def columns(check: Check | None, own: Answers) -> dict[str, Any]:
    """A run's stored lossless figures."""
    acc, graded = accuracy(own)
    out: dict[str, Any] = {"accuracy": acc, "graded": graded}
    if check is not None:
        out.update({"lossless_baseline": check.baseline, "lossless_compared": check.compared,
                    "lossless_identical": check.identical, "lossless_prefix": check.prefix_share,
                    "lossless_turned_wrong": check.turned_wrong, "lossless_turned_right": check.turned_right})
    return out


def verdict(row: store.RunRecord) -> str | None:
    """Why this stored run's outputs cannot be trusted as lossless, or None."""
    compared = row.lossless_compared
    if not compared:
        return None
    share = (row.lossless_identical or 0) / compared
    wrong, right = row.lossless_turned_wrong or 0, row.lossless_turned_right or 0
    reasons = []
    prefix = row.lossless_prefix
    if share < IDENTICAL_MIN or (prefix is not None and prefix < PREFIX_MIN):
        reasons.append(f"{row.lossless_identical or 0}/{compared} answers identical to baseline run "
                       f"{row.lossless_baseline} ({share:.0%})"
                       + ("" if prefix is None else f", median common prefix {prefix:.0%} of the baseline's answer")
                       + f"; flagged below {IDENTICAL_MIN:.0%} identical or a {PREFIX_MIN:.0%} prefix, which "
                         "healthy runs clear by far")
    if wrong > right and sign_test_p(wrong, right) < ACCURACY_P:
        reasons.append(f"{wrong} answers right in the baseline are wrong here, {right} the other way "
                       f"(sign test p = {sign_test_p(wrong, right):.3f})")
    if not reasons:
        return None
    return "outputs differ from the baseline: this server's speculation is not lossless (" + "; ".join(reasons) + ")"


def summary(row: store.RunRecord) -> str:
    """One cell: identical share and accuracy, '-' where not checked."""
    parts = []
    if row.lossless_compared:
        parts.append(f"{row.lossless_identical or 0}/{row.lossless_compared} identical")
    if row.graded:
        parts.append(f"acc {row.accuracy:.0%} of {row.graded}")
    return ", ".join(parts) or "-"


def figures_for(rows: list[store.RunRecord], answers_of: Callable[[int], Answers]) -> dict[int, dict[str, Any]]:
    """The stored columns of every checkable run among `rows` (one experiment's), each speculative
    run against its baseline; `answers_of(run_id)` reads a run's answers. Runs without stored
    answers (recorded before answers were) get nothing."""
    cache: dict[int, Answers] = {}

    def of(run_id: int) -> Answers:
        if run_id not in cache:
            cache[run_id] = answers_of(run_id)
        return cache[run_id]

    out = {}
    for row in rows:
        if not checkable(row) or not of(row.id):
            continue
        base = baseline_for(row, rows)
        check = compare(base.id, of(base.id), of(row.id)) if base else None
        out[row.id] = columns(check, of(row.id))
    return out
