"""Interop with `vllm bench serve --save-result` JSON: import results as runs, export runs in that format.

Units differ from ours: its `spec_decode_acceptance_rate` is a percent (0..100), while its
per-position list and our acceptance rate are fractions (0..1).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from workbench import methods, store
from workbench.errors import DraftbenchError

# bench field -> our run column, for the figures that mean the same thing in the same unit.
SAME = {
    "duration": "window_s", "total_output_tokens": "output_tokens", "output_throughput": "output_tok_s",
    "completed": "requests_ok", "failed": "requests_failed",
    "mean_ttft_ms": "ttft_mean_ms", "median_ttft_ms": "ttft_p50_ms", "p99_ttft_ms": "ttft_p99_ms",
    "mean_itl_ms": "itl_mean_ms", "median_itl_ms": "itl_p50_ms", "p99_itl_ms": "itl_p99_ms",
    "mean_tpot_ms": "tpot_mean_ms", "mean_e2el_ms": "e2el_mean_ms",
    "spec_decode_acceptance_length": "mal", "spec_decode_num_drafts": "drafts",
    "spec_decode_draft_tokens": "draft_tokens", "spec_decode_accepted_tokens": "accepted",
}
REQUIRED = ("duration", "completed", "total_output_tokens", "output_throughput")


class BenchJsonError(DraftbenchError, ValueError):
    """A one-line reason a file is not a usable `vllm bench serve` result."""


def read(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BenchJsonError(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BenchJsonError(f"{path.name} is not a JSON file ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise BenchJsonError(f"{path.name} is not a vllm bench serve result (not a JSON object)")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise BenchJsonError(f"{path.name} is not a vllm bench serve result (no {missing[0]!r})")
    return data


def to_run(data: dict) -> dict:
    """Our run figures from a bench result."""
    row = {ours: data.get(theirs) for theirs, ours in SAME.items()}
    if data.get("spec_decode_acceptance_rate") is not None:
        row["acceptance_rate"] = data["spec_decode_acceptance_rate"] / 100.0
    per_position = data.get("spec_decode_per_position_acceptance_rates")
    if per_position is not None:
        row["per_position"] = json.dumps(list(per_position))
    row["generation_tokens"] = data.get("total_output_tokens")
    row["prompt_tokens"] = data.get("total_input_tokens")
    return row


def import_file(db: store.Database, path: str | Path, method: str = "baseline", n: int | None = None,
                draft: str | None = None, target: str | None = None, workload: str | None = None) -> int:
    """Store a bench result as a completed run of its own experiment; returns the run id."""
    data = read(path)
    spec = methods.get(method)
    if spec.name != "baseline" and n is None:
        raise BenchJsonError(f"say which N the {spec.name} run used (--n)")
    if spec.name == "baseline" and data.get("spec_decode_num_drafts"):
        raise BenchJsonError("the file has speculative-decoding figures: say which --method and --n it used")
    raw = Path(path).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()[:16]
    exp = store.experiment_for(db, f"imported {Path(path).name}", f"bench:{digest}", raw.decode(errors="replace"),
                               str(path), {"source": "vllm bench serve", "date": data.get("date")})
    existing = store.first_run_of_experiment(db, exp)
    if existing is not None:
        return existing
    concurrency = data.get("max_concurrency") or data.get("num_prompts") or 1
    rate = data.get("request_rate")
    row = {
        "experiment_id": exp, "key": digest, "seq": 0, "server_key": digest,
        "target": target or data.get("model_id") or "?", "method": spec.name, "draft": draft, "n": n,
        "options": "{}", "workload": workload or data.get("label") or Path(path).stem,
        "concurrency": int(concurrency), "request_rate": None if rate in (None, "inf") else float(rate),
        "repeat": 1, "num_prompts": data.get("num_prompts"), "status": "completed",
        "command": "vllm bench serve (imported)", "started": time.time(), "finished": time.time(),
        **to_run(data),
    }
    if data.get("what_if"):  # a what-if run exported by draftbench stays one when imported back
        row["what_if"] = 1
        row["imposed"] = json.dumps(data["imposed"]) if isinstance(data.get("imposed"), dict) else None
    return store.add_imported_run(db, row)


def export_run(run: store.RunRecord) -> dict:
    """One of our runs as a `vllm bench serve` result (the summary fields, same names and units)."""
    row = run.as_dict()  # the summary fields are looked up by the column names SAME maps to
    out: dict[str, Any] = {theirs: row[ours] for theirs, ours in SAME.items() if row[ours] is not None}
    out.update({
        "backend": "openai-chat", "model_id": run.target, "num_prompts": run.num_prompts,
        "max_concurrency": run.concurrency,
        "request_rate": run.request_rate if run.request_rate else "inf",
        "total_input_tokens": run.prompt_tokens,
        "request_throughput": (run.requests_ok / run.window_s) if run.window_s and run.requests_ok is not None
        else None,
        "label": f"draftbench run {run.id}: {run.method}" + (f" N={run.n}" if run.n is not None else ""),
    })
    if run.acceptance_rate is not None:
        out["spec_decode_acceptance_rate"] = 100.0 * run.acceptance_rate
    if run.per_position:
        out["spec_decode_per_position_acceptance_rates"] = list(run.per_position)
    if run.provenance:
        # Not a field of vllm bench serve's own files, which ignore keys they do not know.
        out["draftbench_provenance"] = json.loads(run.provenance)
    if run.what_if:
        # Served with dummy weights and an imposed acceptance: the file says so, with the curve,
        # so its figures are never read (or imported back) as measured ones.
        out["what_if"] = True
        out["label"] += " (what-if)"
        if run.imposed:
            out["imposed"] = json.loads(run.imposed)
    return out
