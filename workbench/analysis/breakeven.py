"""What a what-if run tells: the cost of a speculative step, and the acceptance at which it pays.

Acceptance depends on the weights and the data; the cost of a step depends on the shapes, the
kernels, N and the batch. A what-if run (dummy weights, acceptance imposed) measures the second
with the first fixed, so the two separate:

- Every speculative step yields MAL tokens per sequence where a baseline step yields one, so
  speedup S = MAL / c, where c is the step cost: the time of a speculative step (draft + verify)
  in baseline steps. From a what-if run, c = MAL read back / S measured.
- With c known, the speedup at any acceptance follows: S(MAL) = MAL / c, and it pays (S >= 1)
  once MAL >= c. For a curve of the imposed shape scaled to its first position (p_i = p1 * r_i,
  r_i = imposed p_i / imposed p_1, the conditional acceptances kept), MAL = 1 + p1 * sum(r), so it
  pays once p1 >= (c - 1) / sum(r); above 1, it never does at that N and concurrency.

The step cost is taken at the imposed acceptance; it moves little with acceptance (the verify pass
scores N+1 positions whatever is accepted), which is what makes the extrapolation fair near the
imposed point. Pure, no Qt.
"""

from __future__ import annotations

from workbench.analysis.compare import Config

GRID = [i / 20 for i in range(21)]  # p1 from 0 to 1, for the chart


def shape(rates: list[float]) -> list[float]:
    """The imposed curve relative to its first position (r_1 = 1)."""
    if not rates or rates[0] <= 0:
        return [1.0] + [0.0] * (len(rates) - 1) if rates else []
    return [p / rates[0] for p in rates]


def rows(cs: list[Config]) -> list[dict]:
    """One row per what-if speculative configuration with a what-if baseline: the speedup
    measured, MAL read back against the imposed, the step cost, and the break-even MAL and p1."""
    out = []
    for c in cs:
        if not c.what_if or c.method == "baseline" or c.speedup is None or not c.mal.mean:
            continue
        imposed = c.imposed or {}
        rates = imposed.get("rates") or []
        cost = c.mal.mean / c.speedup
        r = shape(rates)
        p1 = (cost - 1.0) / sum(r) if sum(r) > 0 else None
        out.append({
            "target": c.target, "method": c.method, "draft": c.draft, "n": c.n, "workload": c.workload,
            "concurrency": c.concurrency, "config": c.label, "speedup": c.speedup,
            "speedup_ci95": c.speedup_ci95, "tok_s": c.tok_s.mean,
            "baseline_tok_s": c.baseline.tok_s.mean if c.baseline else None,
            "mal": c.mal.mean, "imposed_mal": imposed.get("mal"), "imposed_rates": rates,
            "imposed_source": imposed.get("source"),
            "per_position": c.per_position, "step_cost": cost, "break_even_mal": cost,
            "break_even_p1": p1, "pays_ever": p1 is not None and p1 <= 1.0, "repeats": c.tok_s.n,
        })
    out.sort(key=lambda x: (str(x["target"]), x["method"], x["n"] or 0, x["concurrency"]))
    return out


def curve(row: dict) -> list[dict]:
    """Speedup against p1 (the imposed shape scaled), for the break-even chart."""
    r = shape(row["imposed_rates"])
    return [{"p1": p, "mal": 1.0 + p * sum(r), "speedup": (1.0 + p * sum(r)) / row["step_cost"]} for p in GRID]


def measured_p1(row: dict) -> float | None:
    """Where the run itself sits on its curve: the p1 whose scaled shape gives the MAL read back
    (close to the imposed p1; on the curve by construction, as the step cost came from it)."""
    total = sum(shape(row["imposed_rates"]))
    return (row["mal"] - 1.0) / total if total > 0 else None


def chart_data(cs: list[Config]) -> list[dict]:
    """The break-even chart's rows: per configuration x concurrency, speedup against p1, with the
    run's own point (measured_p1, speedup_measured) and the source of its imposed curve, so a file
    of these rows says it is not measured acceptance."""
    return [{"series": f"{row['config']} · c={row['concurrency']}", "method": row["method"], "config_n": row["n"],
             "workload": row["workload"], "concurrency": row["concurrency"], **point,
             "what_if": True, "imposed_source": row["imposed_source"], "step_cost": row["step_cost"],
             "break_even_p1": row["break_even_p1"], "measured_p1": measured_p1(row),
             "speedup_measured": row["speedup"]}
            for row in rows(cs) for point in curve(row)]


def source_text(items: list) -> str:
    """The imposed curves' sources, once each ("typed", "published: ..."), for a title that says
    what acceptance was imposed; items are configurations or rows with `imposed_source`."""
    found = []
    for item in items:
        source = item.get("imposed_source") if isinstance(item, dict) else (item.imposed or {}).get("source")
        if source and source not in found:
            found.append(source)
    return "; ".join(found) or "?"


def sentence(group: list[dict]) -> str:
    """One method x N over its concurrencies, in words: where it pays and from what acceptance."""
    first = group[0]
    pays = [g for g in group if g["pays_ever"]]
    label = first["config"].replace(" (what-if)", "")
    if not pays:
        return (f"{label} does not pay at any measured concurrency, even if every draft were accepted "
                f"(step cost {max(g['step_cost'] for g in group):.2f} baseline steps > MAL {1 + len(first['imposed_rates'])})")
    top = max(g["concurrency"] for g in pays)
    need = max(g["break_even_p1"] for g in pays)
    at = "c = " + str(top) if len(group) == 1 else f"c <= {top}"
    tail = "" if len(pays) == len(group) else f"; not at c = {', '.join(str(g['concurrency']) for g in group if not g['pays_ever'])}"
    return f"{label} pays at {at} once position 1 accepts >= {max(need, 0.0):.2f}{tail}"


def sentences(cs: list[Config]) -> list[str]:
    groups: dict[tuple, list[dict]] = {}
    for row in rows(cs):
        groups.setdefault((row["target"], row["method"], row["draft"], row["n"], row["workload"]), []).append(row)
    return [sentence(g) for g in groups.values()]
