"""What-if plans from what the database already holds: a measured run's own acceptance curve,
imposed on the same configuration served with dummy weights. The pair of them is the check that a
what-if run costs what the real one did (same target, draft, N, workload, lengths, concurrency)."""

from __future__ import annotations

import json
from pathlib import Path

import tomli_w

from workbench import store
from workbench.checkpoints import demo
from workbench.plan import TEXT_DRAFTERS, acceptance


class WhatIfError(Exception):
    """Why a what-if plan cannot be written, in one line."""


def curve_from_run(db, run_id: int) -> dict:
    """`{rates, source}` of a completed speculative run's measured per-position acceptance."""
    row = store.run(db, run_id)
    if row is None:
        raise WhatIfError(f"no run {run_id} in this database")
    if row["method"] == "baseline" or not row.get("per_position"):
        raise WhatIfError(f"run {run_id} measured no acceptance (a baseline, or a run without drafts)")
    if row["method"] in TEXT_DRAFTERS:
        raise WhatIfError(f"run {run_id} is {row['method']}, which drafts from the generated text: "
                          "not a what-if method (dummy weights make that text noise)")
    if row["status"] != "completed":
        raise WhatIfError(f"run {run_id} is {row['status']}, not completed: its curve is not a measurement")
    if row.get("what_if"):
        raise WhatIfError(f"run {run_id} is itself a what-if run: its curve was imposed, not measured")
    rates = [round(min(1.0, p), 4) for p in json.loads(row["per_position"])]
    for i in range(1, len(rates)):  # a survival curve; a ratio of counters rounds to within 1e-4
        rates[i] = min(rates[i], rates[i - 1])
    source = (f"measured: run {run_id} ({row['method']} N={row['n']}, {row['workload']}, "
              f"c={row['concurrency']}, MAL {acceptance.mal_of(rates):.2f})")
    return {"rates": rates, "source": source}


def _model_ref(path: str | None) -> str | None:
    """A stored model path as a plan names it: demo models by their demo: name."""
    if path is None:
        return None
    for m in demo.ALL:
        if str(demo.folder(m)) == path:
            return f"demo:{m.name}"
    return path


def plan_from_run(db, run_id: int, concurrency: list[int] | None = None, repeats: int = 1) -> str:
    """A what-if plan serving run `run_id`'s configuration with its own measured curve."""
    curve = curve_from_run(db, run_id)
    row = store.run(db, run_id)
    method = {"method": row["method"], "n": row["n"], "acceptance": curve}
    if row.get("draft"):
        method["draft"] = _model_ref(row["draft"])
    options = json.loads(row.get("options") or "{}")
    if options:
        method["options"] = options
    workload = {"names": [row["workload"]], "num_prompts": row["num_prompts"], "max_tokens": row["max_tokens"],
                "warmup": row["warmup"], "concurrency": concurrency or [row["concurrency"]],
                "temperature": row["temperature"], "top_p": row["top_p"], "repeats": repeats,
                "ignore_eos": bool(row.get("ignore_eos"))}
    doc = {"name": f"what-if-of-run-{run_id}", "target": {"model": _model_ref(row["target"])},
           "sweep": {"mode": "what-if"}, "methods": [method], "workload": workload}
    profile = json.loads(row.get("profile") or "{}")
    if profile and profile.get("kind", "local") != "local":
        doc["profile"] = profile
    return f"# Run {run_id}'s configuration with dummy weights and its own measured acceptance.\n" + tomli_w.dumps(doc)


def write_plan(db, run_id: int, out: Path, **kwargs) -> Path:
    text = plan_from_run(db, run_id, **kwargs)
    if out.exists():
        raise WhatIfError(f"{out} already exists; choose another --out")
    try:
        out.write_text(text)
    except OSError as exc:
        raise WhatIfError(f"cannot write {out}: {exc.strerror}") from None
    return out
