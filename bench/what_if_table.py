"""The what-if rows of a database as two markdown tables: every method x N x concurrency (speedup,
MAL read back against the imposed, step cost, break-even acceptance), and the N model's predicted
speedup against the measured one where a method ran at three or more N.

The N model (workbench/analysis/recommend.py) says speedup(N) = T(N) / c(N): T(N) tokens a step
from the acceptance curve, c(N) = 1 + alpha + beta * N the step's cost in baseline steps, a line
fitted to measured points. A what-if run fixes T (the curve is imposed), so its rows test the cost
line alone: hold one N out, fit the line to the others (their MAL read back / speedup), predict the
held-out N from its imposed MAL, and compare with what it measured. Rows of one target, method and
concurrency are pooled across experiments, each speedup against its own experiment's baseline.

    python bench/what_if_table.py [--db docs/gpu/what-if-h200.sqlite]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench import store  # noqa: E402
from workbench.analysis import breakeven, compare, recommend  # noqa: E402

DB = ROOT / "docs" / "gpu" / "what-if-h200.sqlite"


def experiments(db) -> list[int]:
    return sorted({r.experiment_id for r in store.runs(db)})


def what_if_rows(db) -> list[dict]:
    rows = []
    for exp in experiments(db):
        cs = compare.configs(store.runs_of_experiment(db, exp))
        for row in breakeven.rows(cs):
            # A shape is stored as the folder it was served from; its name is the folder's.
            rows.append({**row.as_dict(), "target": Path(str(row.target)).name, "experiment": exp})
    rows.sort(key=lambda r: (str(r["target"]), r["method"], r["n"], r["concurrency"]))
    return rows


def not_served(db) -> list[str]:
    """Configurations whose every run failed, with the first reason (one line each)."""
    out = {}
    for exp in experiments(db):
        for r in store.runs_of_experiment(db, exp):
            if r.status == "failed" and r.n:
                key = (Path(str(r.target)).name, r.method, r.n)
                out.setdefault(key, (r.error or "").splitlines()[0][:200])
    return [f"{t} {m} N={n}: {why}" for (t, m, n), why in out.items()]


def predictions(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, dict[int, dict]] = {}
    for r in rows:
        groups.setdefault((r["target"], r["method"], r["concurrency"]), {})[r["n"]] = r
    out = []
    for (target, method, conc), by_n in sorted(groups.items(), key=lambda g: (str(g[0][0]), g[0][1], g[0][2])):
        if len(by_n) < 3:
            continue
        for held in sorted(by_n):
            points = [recommend.Point(n, r["speedup"], r["mal"], recommend.DEFAULT_REL_SE, 1)
                      for n, r in by_n.items() if n != held]
            line = recommend.fit_cost(points)
            row = by_n[held]
            predicted = row["imposed_mal"] / line.cost(held)
            fitted = sorted(n for n in by_n if n != held)
            out.append({"target": target, "method": method, "concurrency": conc, "n": held,
                        "from": "+".join(map(str, fitted)),
                        "kind": "interpolated" if fitted[0] < held < fitted[-1] else "extrapolated",
                        "cost_measured": row["step_cost"], "cost_predicted": line.cost(held),
                        "measured": row["speedup"], "predicted": predicted,
                        "error_pct": 100 * (predicted - row["speedup"]) / row["speedup"]})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default=str(DB))
    # Reading the recorded what-if sweep takes seconds: the smoke run is the whole benchmark.
    ap.add_argument("--smoke", action="store_true", help="the same (already seconds long, on recorded runs)")
    args = ap.parse_args(argv)
    db = store.open_db(args.db, readonly=True)
    rows = what_if_rows(db)
    print("| target | method | N | c | baseline tok/s | tok/s | speedup | MAL read back / imposed | step cost "
          "| break-even MAL | break-even p1 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        p1 = r["break_even_p1"]
        print(f"| {r['target']} | {r['method']} | {r['n']} | {r['concurrency']} | {r['baseline_tok_s']:,.1f} "
              f"| {r['tok_s']:,.1f} | {r['speedup']:.2f} | {r['mal']:.2f} / {r['imposed_mal']:.2f} "
              f"({100 * (r['mal'] - r['imposed_mal']) / r['imposed_mal']:+.1f} %) | {r['step_cost']:.2f} "
              f"| {r['break_even_mal']:.2f} | {'never' if p1 is None or p1 > 1 else f'{p1:.2f}'} |")
    worst_mal = max((abs(r["mal"] - r["imposed_mal"]) / r["imposed_mal"] for r in rows), default=0.0)
    print(f"\n{len(rows)} what-if rows; MAL read back within {100 * worst_mal:.1f} % of the imposed in every row")
    for line in not_served(db):
        print(f"not served: {line}")
    preds = predictions(rows)
    if preds:
        print("\n| target | method | c | N held out | fitted on N | step cost measured / predicted "
              "| speedup measured | predicted | error |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for p in preds:
            print(f"| {p['target']} | {p['method']} | {p['concurrency']} | {p['n']} ({p['kind']}) | {p['from']} "
                  f"| {p['cost_measured']:.2f} / {p['cost_predicted']:.2f} | {p['measured']:.2f} "
                  f"| {p['predicted']:.2f} | {p['error_pct']:+.1f} % |")
        for kind in ("interpolated", "extrapolated"):
            errs = [abs(p["error_pct"]) for p in preds if p["kind"] == kind]
            if errs:
                print(f"worst {kind} error {max(errs):.1f} % ({len(errs)} predictions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
