"""Draftbench's own N model (workbench.analysis.recommend, what the Compare page recommends) fed
what a user would have, checked against real drafting on a GPU-bound target.

Input: the rows bench/real_vs_whatif.py writes for one GPU (docs/gpu/real-drafter/*.json). Per
concurrency the model is given
- the baseline,
- one real run: the one at the file's largest N (its measured per-position curve and its speedup),
- a what-if run at every N of the file (the step's cost there, with dummy weights),
stored as run records and read through compare.configs, as the app reads a sweep's database. It
predicts the speedup at every N from 1 to the largest; where a real run at that N was measured
(but not given to the model), the table shows the error. Printed per GPU: the predictions, the
cost's source at each N ("what-if" measured there; "interpolated" or "extrapolated" from the line
through the what-if costs, between the N they measured or beyond them), and the best N with the
model's own "uncertain" flag.

The what-if side of these files has no baseline server of its own; the real baseline stands in for
it: a dense target's decode step costs the same whatever its weights hold (on the H200 the
dummy-weight Llama-3.1-8B shape ran 204 tok/s at c=1 in docs/gpu/fidelity.json, the seeded target
of the pair 204).

usage: python bench/recommend_real_drafter.py [ROWS.json ...]   (default: the kept H200 and H100 rows)
       python bench/recommend_real_drafter.py --smoke           (the same, they are small)
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench import store  # noqa: E402
from workbench.analysis import compare, recommend  # noqa: E402

KEPT = sorted((ROOT / "docs" / "gpu" / "real-drafter").glob("real-vs-what-if-*.json"))


@dataclass(frozen=True)
class Cell:
    gpu: str
    concurrency: int
    n: int
    predicted: float
    half_width: float
    cost_source: str         # "what-if", "interpolated" or "extrapolated" (both fitted)
    measured: float | None   # the real run's speedup at this N, None where none ran
    given: bool              # the real run the model was given (its own curve)

    @property
    def error(self) -> float | None:
        return None if self.measured is None else self.predicted / self.measured - 1


def _record(i: int, n: int | None, c: int, tok_s: float, mal: float | None = None,
            curve: list[float] | None = None, what_if: bool = False) -> store.RunRecord:
    """A completed run as the store reads one back; the fields the grouping and the model use."""
    return store.run_record({
        "id": i, "experiment_id": 2 if what_if else 1, "status": "completed", "target": "llama-3.1-8b-seeded",
        "method": "draft_model" if n else "baseline", "draft": "draft-2-layers" if n else None, "options": "{}",
        "n": n, "workload": "builtin", "concurrency": c, "max_tokens": 256, "temperature": 0.0, "repeat": 1,
        "output_tok_s": tok_s, "mal": mal, "per_position": None if curve is None else json.dumps(curve),
        "what_if": int(what_if), "imposed": json.dumps({"source": "measured", "rates": curve}) if what_if else None})


def evaluate(path: Path) -> tuple[list[Cell], dict[int, recommend.Recommendation]]:
    rows = json.loads(path.read_text())
    gpu = path.stem.rsplit("-", 1)[-1]
    base = {r["concurrency"]: r["real_tok_s"] for r in rows if not r.get("n")}
    n_max = max(r["n"] for r in rows if r.get("n"))
    cells: list[Cell] = []
    recs: dict[int, recommend.Recommendation] = {}
    for c in sorted(base):
        spec = {r["n"]: r for r in rows if r.get("n") and r["concurrency"] == c}
        if n_max not in spec:
            continue
        top = spec[n_max]
        records = [_record(1, None, c, base[c]),
                   _record(2, n_max, c, top["real_tok_s"], statistics.median(top["real_mal"]), top["imposed"]),
                   _record(3, None, c, base[c], what_if=True)]
        records += [_record(10 + n, n, c, r["what_if_tok_s"], statistics.median(r["what_if_mal"]), r["imposed"], True)
                    for n, r in sorted(spec.items())]
        rec = next(iter(recommend.from_configs(compare.configs(records)).values()))
        recs[c] = rec
        lo, hi = min(spec), max(spec)  # the N the what-if runs measured
        for p in rec.curve:
            real = spec.get(p.n)
            source = p.cost_source if p.cost_source != "fitted" else (
                "interpolated" if lo < p.n < hi else "extrapolated")
            cells.append(Cell(gpu, c, p.n, p.speedup, p.half_width, source,
                              real["real_tok_s"] / base[c] if real else None, p.n == n_max))
    return cells, recs


def main() -> int:
    files = [Path(a) for a in sys.argv[1:] if a != "--smoke"] or KEPT
    print("| GPU | c | N | predicted speedup | measured speedup | error | step cost from | note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    bests = []
    for f in files:
        cells, recs = evaluate(f)
        for x in cells:
            measured = "-" if x.measured is None else f"{x.measured:.3f}"
            error = "-" if x.error is None else f"{x.error:+.1%}"
            note = "the real run given" if x.given else ("" if x.measured is not None else "not run for real")
            print(f"| {x.gpu} | {x.concurrency} | {x.n} | {x.predicted:.3f} ± {x.half_width:.3f} | {measured} | "
                  f"{error} | {x.cost_source} | {note} |")
        for c, rec in recs.items():
            ran = {x.n: x.measured for x in cells if x.concurrency == c and x.measured is not None}
            top = max(ran, key=lambda n: ran[n])
            bests.append(f"| {cells[0].gpu} | {c} | {rec.best_n}{' (uncertain)' if rec.uncertain else ''} | "
                         f"{top if ran[top] > 1 else 0} of N = {', '.join(map(str, sorted(ran)))} |")
        held = [abs(x.error) for x in cells if x.error is not None and not x.given]
        if held:
            print(f"\n{cells[0].gpu}: N not given to the model, worst error {max(held):.1%} over {len(held)} cells\n")
    print("| GPU | c | best N predicted | best N measured |\n| --- | --- | --- | --- |")
    print("\n".join(bests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
