"""What the Experiment form has no fields for but must not lose when it shows a plan and writes it
back: a what-if sweep's mode and each method's imposed curve, and a prompt count that scales with
concurrency (`num_prompts = {per_concurrency, min}`)."""

from __future__ import annotations

from workbench import plan


def hold_imposed(doc: dict, rows: list) -> tuple[list | None, dict | None]:
    """What the form has no field for: (row, acceptance) per method row of a what-if plan (None for
    another plan), and a `num_prompts = {per_concurrency, min}` table (the spin box shows its min)."""
    w = doc.get("workload") or {}
    prompts = w.get("num_prompts") if isinstance(w.get("num_prompts"), dict) else None
    if prompts is not None:
        w["num_prompts"] = int(prompts.get("min", 1))
    if (doc.get("sweep") or {}).get("mode") != "what-if":
        return None, prompts
    entries = [m for m in doc.get("methods", []) if m.get("method") != "baseline"]
    return [(row, m.get("acceptance")) for row, m in zip(rows, entries)], prompts


def put_imposed(doc: dict, rows: list, held: tuple[list | None, dict | None] | None) -> None:
    """Puts the held mode, curves and prompt table (while the spin box shows its min) back into the
    form's document. A row added since has no curve: the plan check asks for one, in one line."""
    curves, prompts = held or (None, None)
    w = doc.get("workload") or {}
    if prompts is not None and w.get("num_prompts") == int(prompts.get("min", 1)):
        w["num_prompts"] = prompts
    if curves is None:
        return
    if (doc.get("sweep") or {}).get("mode") == "adaptive":
        raise plan.PlanError("a what-if sweep runs every N it lists: it cannot be adaptive (uncheck adaptive N)")
    doc.setdefault("sweep", {})["mode"] = "what-if"
    for entry, row in zip(doc["methods"], rows):
        accepted = next((a for r, a in curves if r is row), None)
        if accepted is not None:
            entry["acceptance"] = accepted
