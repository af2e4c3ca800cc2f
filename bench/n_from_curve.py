"""The N model on a measured cost surface, checked against real drafting.

Input: the rows bench/real_vs_whatif.py writes (real and what-if throughput per N and concurrency,
and a baseline). The model sees only what a user would have before choosing N:
- one real run at the largest N, whose per-position curve truncated to the first N positions is
  the predicted curve at every smaller N (a survival curve: position i is reached only through
  positions 1..i-1), so predicted MAL(N) = 1 + the sum of its first N rates;
- the what-if runs, which measure a speculative step's rate at each (N, c) with dummy weights:
  steps/s = what-if output tok/s / the MAL the what-if run read back.
Predicted tok/s(N, c) = steps/s(N, c) x predicted MAL(N); speedup over the baseline at c. Printed:
predicted against measured per cell, the error, and the best N per concurrency by each (N = 0 is
no speculation). Cells are marked `measured curve` at the largest N (the model's own input) and
`truncated curve` below it.

usage: python bench/n_from_curve.py docs/gpu/real-drafter/real-vs-what-if-h200.json
       python bench/n_from_curve.py H200.json H100.json   (rows of two GPUs, best N by speedup)
       python bench/n_from_curve.py ROWS.json --curve-from docs/gpu/real-drafter/real-vs-what-if-h200.json
       python bench/n_from_curve.py --smoke     (the H200 rows kept in docs/gpu/real-drafter)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def predict(rows: list[dict], curve_rows: list[dict] | None = None) -> list[dict]:
    """curve_rows: where the N_max run is, when it ran on another GPU than `rows` (the seeded pair
    accepts the same tokens on any GPU: the curve is the pair's, the step rates are the GPU's)."""
    spec = [r for r in rows if r.get("n")]
    base = {r["concurrency"]: r["real_tok_s"] for r in rows if not r.get("n")}
    source = [r for r in (curve_rows or rows) if r.get("n")]
    n_max = max(r["n"] for r in source)
    curve = next(r["imposed"] for r in source if r["n"] == n_max)  # the N_max run's measured curve
    out = []
    for r in sorted(spec, key=lambda r: (r["concurrency"], r["n"])):
        steps = r["what_if_tok_s"] / statistics.median(r["what_if_mal"])
        mal = 1 + sum(curve[:r["n"]])
        b = base.get(r["concurrency"])
        out.append({"n": r["n"], "concurrency": r["concurrency"], "predicted_mal": mal,
                    "measured_mal": statistics.median(r["real_mal"]), "predicted_tok_s": steps * mal,
                    "measured_tok_s": r["real_tok_s"], "error": steps * mal / r["real_tok_s"] - 1,
                    "predicted_speedup": steps * mal / b if b else None,
                    "measured_speedup": r["real_tok_s"] / b if b else None,
                    "kind": "measured curve" if r["n"] == n_max else "truncated curve"})
    return out


def best(cells: list[dict], key: str) -> dict[int, int]:
    """The best N per concurrency by `key` (predicted_ or measured_), N = 0 (no speculation) when
    nothing beats 1.0x. Ranked by speedup, which on one GPU ranks as tok/s does and across GPUs
    is the only comparable figure (each cell over its own GPU's baseline)."""
    by_c: dict[int, int] = {}
    for c in sorted({x["concurrency"] for x in cells}):
        here = [x for x in cells if x["concurrency"] == c and x[f"{key}_speedup"] is not None]
        top = max(here, key=lambda x: x[f"{key}_speedup"], default=None)
        by_c[c] = top["n"] if top and top[f"{key}_speedup"] > 1 else 0
    return by_c


ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "docs" / "gpu" / "real-drafter" / "real-vs-what-if-h200.json"


def main() -> int:
    argv = [a for a in sys.argv[1:] if a != "--smoke"]
    curve_rows = None
    if "--curve-from" in argv:  # the N_max curve from another GPU's rows: --curve-from FILE
        i = argv.index("--curve-from")
        curve_rows = json.loads(Path(argv[i + 1]).read_text())
        del argv[i:i + 2]
    # Several files: rows of several GPUs (one file each), each cell over its own file's baseline,
    # the N_max curve from all of them unless --curve-from names it.
    paths = [Path(f) for f in (argv or [str(KEPT)])]
    files = {p.stem.rsplit("-", 1)[-1]: json.loads(p.read_text()) for p in paths}  # by GPU, as the files are named
    every = [r for rows in files.values() for r in rows]
    cells = [dict(x, gpu=gpu) for gpu, rows in files.items() for x in predict(rows, curve_rows or every)]
    print("| GPU | N | c | curve | MAL predicted | MAL measured | tok/s predicted | tok/s measured | error | "
          "speedup predicted | speedup measured |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for x in cells:
        sp = "-" if x["predicted_speedup"] is None else f"{x['predicted_speedup']:.2f}"
        sm = "-" if x["measured_speedup"] is None else f"{x['measured_speedup']:.2f}"
        print(f"| {x['gpu']} | {x['n']} | {x['concurrency']} | {x['kind']} | {x['predicted_mal']:.3f} | {x['measured_mal']:.3f} | "
              f"{x['predicted_tok_s']:,.0f} | {x['measured_tok_s']:,.0f} | {x['error']:+.1%} | {sp} | {sm} |")
    pred, meas = best(cells, "predicted"), best(cells, "measured")
    print("\n| c | best N predicted | best N measured |\n| --- | --- | --- |")
    for c in pred:
        print(f"| {c} | {pred[c]} | {meas[c]} |")
    for kind in ("measured curve", "truncated curve"):
        errs = [abs(x["error"]) for x in cells if x["kind"] == kind]
        if errs:
            print(f"\n{kind}: worst error {max(errs):.1%} over {len(errs)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
