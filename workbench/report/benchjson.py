"""Interop with `vllm bench serve --save-result` JSON: import results as runs, export runs in that format.

Units differ from ours: its `spec_decode_acceptance_rate` is a percent (0..100), while its
per-position list and our acceptance rate are fractions (0..1).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, fields
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
# Written even without a value, as `vllm bench serve` writes them; any other field only with one.
ALWAYS = ("backend", "model_id", "num_prompts", "max_concurrency", "request_rate", "total_input_tokens",
          "request_throughput", "label")


class BenchJsonError(DraftbenchError, ValueError):
    """A one-line reason a file is not a usable `vllm bench serve` result."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchResult:
    """The summary of a `vllm bench serve --save-result` file that Draftbench reads and writes, each
    field by its name and in its unit there (the keys SAME maps first). Other keys of a file are not
    read. `draftbench_provenance`, `what_if` and `imposed` are Draftbench's own: a what-if run's
    file says it is one, with the curve imposed, so it is never read (or imported back) as measured."""
    duration: float | None = None
    total_output_tokens: int | None = None
    output_throughput: float | None = None
    completed: int | None = None
    failed: int | None = None
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    mean_tpot_ms: float | None = None
    mean_e2el_ms: float | None = None
    spec_decode_acceptance_length: float | None = None
    spec_decode_num_drafts: float | None = None
    spec_decode_draft_tokens: float | None = None
    spec_decode_accepted_tokens: float | None = None
    backend: str | None = None
    model_id: str | None = None
    num_prompts: int | None = None
    max_concurrency: int | None = None
    request_rate: float | str | None = None  # "inf": no limit
    total_input_tokens: float | None = None
    request_throughput: float | None = None
    label: str | None = None
    date: str | None = None
    spec_decode_acceptance_rate: float | None = None  # a percent
    spec_decode_per_position_acceptance_rates: list[float] | None = None
    draftbench_provenance: dict[str, Any] | None = None
    what_if: bool | None = None  # true, or absent
    imposed: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any], name: str) -> BenchResult:
        """The result in a file's parsed JSON; BenchJsonError when it is not one (`name` the file's)."""
        if not isinstance(data, dict):
            raise BenchJsonError(f"{name} is not a vllm bench serve result (not a JSON object)")
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise BenchJsonError(f"{name} is not a vllm bench serve result (no {missing[0]!r})")
        known = {f.name for f in fields(cls)}
        imposed = data.get("imposed")
        return cls(**{k: v for k, v in data.items() if k in known}
                   | {"what_if": True if data.get("what_if") else None,
                      "imposed": imposed if isinstance(imposed, dict) else None})

    @classmethod
    def from_run(cls, run: store.RunRecord) -> BenchResult:
        """One of our runs as a result (the summary fields, same names and units)."""
        rate = run.acceptance_rate
        return cls(
            **{theirs: getattr(run, ours) for theirs, ours in SAME.items()},
            backend="openai-chat", model_id=run.target, num_prompts=run.num_prompts,
            max_concurrency=run.concurrency, request_rate=run.request_rate if run.request_rate else "inf",
            total_input_tokens=run.prompt_tokens,
            request_throughput=(run.requests_ok / run.window_s) if run.window_s and run.requests_ok is not None
            else None,
            label=(f"draftbench run {run.id}: {run.method}" + (f" N={run.n}" if run.n is not None else "")
                   + (" (what-if)" if run.what_if else "")),
            spec_decode_acceptance_rate=100.0 * rate if rate is not None else None,
            spec_decode_per_position_acceptance_rates=list(run.per_position) if run.per_position else None,
            # Not a field of vllm bench serve's own files, which ignore keys they do not know.
            draftbench_provenance=json.loads(run.provenance) if run.provenance else None,
            what_if=True if run.what_if else None,
            imposed=json.loads(run.imposed) if run.what_if and run.imposed else None)

    def as_dict(self) -> dict[str, Any]:
        """The result as its file holds it: a field without a value is left out but for those vllm
        bench serve always writes."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name in ALWAYS or getattr(self, f.name) is not None}

    def run_columns(self) -> dict[str, Any]:
        """Our run figures from the result, by our column names (the store stores a run from them)."""
        rate, per_position = self.spec_decode_acceptance_rate, self.spec_decode_per_position_acceptance_rates
        return {ours: getattr(self, theirs) for theirs, ours in SAME.items()} | {
            "acceptance_rate": rate / 100.0 if rate is not None else None,
            "per_position": json.dumps(list(per_position)) if per_position is not None else None,
            "generation_tokens": self.total_output_tokens, "prompt_tokens": self.total_input_tokens}


def read(path: str | Path) -> BenchResult:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BenchJsonError(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BenchJsonError(f"{path.name} is not a JSON file ({type(exc).__name__})") from None
    return BenchResult.from_json(data, path.name)


def import_file(db: store.Database, path: str | Path, method: str = "baseline", n: int | None = None,
                draft: str | None = None, target: str | None = None, workload: str | None = None) -> int:
    """Store a bench result as a completed run of its own experiment; returns the run id."""
    result = read(path)
    spec = methods.get(method)
    if spec.name != "baseline" and n is None:
        raise BenchJsonError(f"say which N the {spec.name} run used (--n)")
    if spec.name == "baseline" and result.spec_decode_num_drafts:
        raise BenchJsonError("the file has speculative-decoding figures: say which --method and --n it used")
    raw = Path(path).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()[:16]
    exp = store.experiment_for(db, f"imported {Path(path).name}", f"bench:{digest}", raw.decode(errors="replace"),
                               str(path), {"source": "vllm bench serve", "date": result.date})
    existing = store.first_run_of_experiment(db, exp)
    if existing is not None:
        return existing
    concurrency = result.max_concurrency or result.num_prompts or 1
    rate = result.request_rate
    # A what-if run exported by draftbench stays one when imported back.
    imposed = json.dumps(result.imposed) if result.imposed else None
    what_if = {"what_if": 1, "imposed": imposed} if result.what_if else {}
    return store.add_imported_run(db, {
        "experiment_id": exp, "key": digest, "seq": 0, "server_key": digest,
        "target": target or result.model_id or "?", "method": spec.name, "draft": draft, "n": n,
        "options": "{}", "workload": workload or result.label or Path(path).stem,
        "concurrency": int(concurrency), "request_rate": None if rate in (None, "inf") else float(rate),
        "repeat": 1, "num_prompts": result.num_prompts, "status": "completed",
        "command": "vllm bench serve (imported)", "started": time.time(), "finished": time.time(),
        **result.run_columns(), **what_if,
    })


def export_run(run: store.RunRecord) -> dict[str, Any]:
    """One of our runs as a `vllm bench serve` result, as its file holds it."""
    return BenchResult.from_run(run).as_dict()
