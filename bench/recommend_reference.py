"""How well the N model predicts the reference study's Gemma 4 MTP speedups.

For each target x dataset with three or more N, the model sees only N_max's row (its survival
curve and speedup) and one other N's row (probe), and predicts the speedup of every other row.
Prints a row per prediction (measured, predicted with its 95% interval, error) and per group
whether the predicted best N is the measured best.

    python bench/recommend_reference.py [--csv tests/fixtures/reference_study_mtp.csv] [--probe 1 2]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.analysis import recommend  # noqa: E402

CSV = ROOT / "tests" / "fixtures" / "reference_study_mtp.csv"


@dataclass
class Row:
    target: str
    dataset: str
    probe: int
    n: int
    measured: float
    predicted: float
    half_width: float

    @property
    def error_pct(self) -> float:
        return 100 * (self.predicted - self.measured) / self.measured

    @property
    def inside(self) -> bool:
        return abs(self.predicted - self.measured) <= self.half_width


@dataclass
class Group:
    target: str
    dataset: str
    probe: int
    measured_best: int
    predicted_best: int
    uncertain: bool
    runner_up: int | None

    @property
    def identified(self) -> bool:
        return self.measured_best == self.predicted_best


def groups(path: Path) -> dict[tuple[str, str], dict[int, dict]]:
    out: dict[tuple[str, str], dict[int, dict]] = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            out.setdefault((r["target"], r["dataset"]), {})[int(r["N"])] = r
    return out


def evaluate(path: Path = CSV, probe: int = 1, rel_se: float = recommend.DEFAULT_REL_SE,
             method: str = "mtp") -> tuple[list[Row], list[Group], list[tuple[str, str]]]:
    """Rows predicted, per-group verdicts, and the groups too small to evaluate."""
    rows, verdicts, skipped = [], [], []
    for (target, dataset), by_n in groups(path).items():
        n_max = max(by_n)
        if len(by_n) < 3 or probe not in by_n or probe == n_max:
            skipped.append((target, dataset))
            continue
        top = by_n[n_max]
        survival = recommend.Survival(tuple(float(x) for x in top["per_position"].split()))
        # No repeats in the study: each speedup gets the default run-to-run noise, the baseline too.
        points = [recommend.Point(n, float(by_n[n]["speedup"]), float(by_n[n]["mal"]), rel_se) for n in (n_max, probe)]
        rec = recommend.recommend(method, survival, points, sorted(by_n), baseline_rel_se=rel_se)
        for n in sorted(by_n):
            if n in (n_max, probe):
                continue
            p = rec.at(n)
            rows.append(Row(target, dataset, probe, n, float(by_n[n]["speedup"]), p.speedup, p.half_width))
        measured_best = max(by_n, key=lambda n: float(by_n[n]["speedup"]))
        verdicts.append(Group(target, dataset, probe, measured_best, rec.best_n, rec.uncertain, rec.runner_up))
    return rows, verdicts, skipped


def constant_cost_rows(path: Path = CSV) -> list[Row]:
    """A deliberately wrong model for comparison: the step cost of N_max at every N."""
    rows = []
    for (target, dataset), by_n in groups(path).items():
        n_max = max(by_n)
        if len(by_n) < 3:
            continue
        top = by_n[n_max]
        survival = recommend.Survival(tuple(float(x) for x in top["per_position"].split()))
        cost = float(top["mal"]) / float(top["speedup"])
        for n in sorted(by_n)[:-1]:
            rows.append(Row(target, dataset, 0, n, float(by_n[n]["speedup"]), survival.tokens_per_step(n) / cost, 0.0))
    return rows


def mean_abs_error(rows: list[Row]) -> float:
    return statistics.fmean(abs(r.error_pct) for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--probe", type=int, nargs="+", default=[1, 2], help="the other N the model is fitted with")
    ap.add_argument("--smoke", action="store_true",
                    help="one probe only: the whole benchmark already runs in seconds on the recorded study")
    args = ap.parse_args()
    if args.smoke:
        args.probe = args.probe[:1]
    for probe in args.probe:
        rows, verdicts, skipped = evaluate(args.csv, probe)
        print(f"\nfitted from N_max and N={probe}")
        print(f"{'target':<22} {'dataset':<10} {'N':>2} {'measured':>8} {'predicted':>15} {'error %':>8}  in 95%")
        for r in rows:
            print(f"{r.target.split('/')[-1]:<22} {r.dataset:<10} {r.n:>2} {r.measured:>8.2f} "
                  f"{r.predicted:>8.2f} ± {r.half_width:.2f} {r.error_pct:>+8.1f}  {'yes' if r.inside else 'no'}")
        print(f"mean |error| {mean_abs_error(rows):.2f}%, max |error| {max(abs(r.error_pct) for r in rows):.2f}%, "
              f"inside the 95% interval {sum(r.inside for r in rows)}/{len(rows)}")
        print(f"{'target':<22} {'dataset':<10} {'best N measured':>15} {'predicted':>9}  identified")
        for g in verdicts:
            note = f" (uncertain: N={g.runner_up} within noise)" if g.uncertain else ""
            print(f"{g.target.split('/')[-1]:<22} {g.dataset:<10} {g.measured_best:>15} {g.predicted_best:>9}  "
                  f"{'yes' if g.identified else 'no'}{note}")
        for target, dataset in skipped:
            print(f"skipped {target.split('/')[-1]} {dataset}: fewer than three N, or no row at N={probe}")
    wrong = constant_cost_rows(args.csv)
    print(f"\nfor comparison, a constant step cost (N_max's at every N): mean |error| {mean_abs_error(wrong):.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
