"""What-if plans from what the database already holds: a measured run's own acceptance curve,
imposed on the same configuration served with dummy weights. The pair of them is the check that a
what-if run costs what the real one did (same target, draft, N, workload, lengths, concurrency)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from workbench import paths, store
from workbench.checkpoints import demo, shapes
from workbench.errors import DraftbenchError
from workbench.plan.fields import SHAPE_PREFIX
from workbench.plan import TEXT_DRAFTERS, acceptance


class WhatIfError(DraftbenchError):
    """Why a what-if plan cannot be written, in one line."""


def curve_from_run(db: store.Database, run_id: int) -> dict[str, Any]:
    """`{rates, source}` of a completed speculative run's measured per-position acceptance."""
    row = store.run(db, run_id)
    if row is None:
        raise WhatIfError(f"no run {run_id} in this database")
    return _curve_of(row)


def _curve_of(row: store.RunRecord) -> dict[str, Any]:
    run_id = row.id
    if row.method == "baseline" or not row.per_position:
        raise WhatIfError(f"run {run_id} measured no acceptance (a baseline, or a run without drafts)")
    if row.method in TEXT_DRAFTERS:
        raise WhatIfError(f"run {run_id} is {row.method}, which drafts from the generated text: "
                          "not a what-if method (dummy weights make that text noise)")
    if row.status != "completed":
        raise WhatIfError(f"run {run_id} is {row.status}, not completed: its curve is not a measurement")
    if row.what_if:
        raise WhatIfError(f"run {run_id} is itself a what-if run: its curve was imposed, not measured")
    rates = [round(min(1.0, p), 4) for p in row.per_position]
    for i in range(1, len(rates)):  # a survival curve; a ratio of counters rounds to within 1e-4
        rates[i] = min(rates[i], rates[i - 1])
    source = (f"measured: run {run_id} ({row.method} N={row.n}, {row.workload}, "
              f"c={row.concurrency}, MAL {acceptance.mal_of(rates):.2f})")
    return {"rates": rates, "source": source}


def _model_ref(path: str | None) -> str | None:
    """A stored model path as a plan names it: demo models by their demo: name."""
    if path is None:
        return None
    for m in demo.ALL:
        if str(demo.folder(m)) == path:
            return f"demo:{m.name}"
    return path


def _served_as(db: store.Database, row: store.RunRecord) -> dict[str, Any]:
    """The [target] and [server] tables of the plan the run came from ({} when it is not stored or
    does not parse: the what-if plan then falls back to the defaults)."""
    text = store.experiment_plan(db, row.experiment_id) if row.experiment_id else None
    try:
        doc = tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}
    return {k: dict(doc[k]) for k in ("target", "server") if isinstance(doc.get(k), dict)}


def plan_from_run(db: store.Database, run_id: int, concurrency: list[int] | None = None, repeats: int = 1,
                  baseline: bool = True) -> str:
    """A what-if plan serving run `run_id`'s configuration with its own measured curve."""
    row = store.run(db, run_id)
    if row is None:
        raise WhatIfError(f"no run {run_id} in this database")
    curve = _curve_of(row)
    method = {"method": row.method, "n": row.n, "acceptance": curve}
    if row.draft:
        method["draft"] = _model_ref(row.draft)
    options = json.loads(row.options or "{}")
    if options:
        method["options"] = options
    workload: dict[str, Any] = {"names": [row.workload], "num_prompts": row.num_prompts, "max_tokens": row.max_tokens,
                "warmup": row.warmup, "concurrency": concurrency or [row.concurrency],
                "temperature": row.temperature, "top_p": row.top_p, "repeats": repeats,
                "ignore_eos": bool(row.ignore_eos)}
    # The server as the measured run had it (length, dtype, eager or compiled, extra arguments):
    # a step costs what the kernels vLLM picks cost, so the pair differs only in weights and sampler.
    served = _served_as(db, row)
    target = {**served.get("target", {}), "model": _model_ref(row.target)}
    doc = {"name": f"what-if-of-run-{run_id}", "target": target,
           "sweep": {"mode": "what-if", **({} if baseline else {"baseline": False})},
           "methods": [method], "workload": workload}
    if served.get("server"):
        doc["server"] = served["server"]
    profile = json.loads(row.profile or "{}")
    if profile and profile.get("kind", "local") != "local":
        doc["profile"] = profile
    return f"# Run {run_id}'s configuration with dummy weights and its own measured acceptance.\n" + tomli_w.dumps(doc)


def write_plan(db: store.Database, run_id: int, out: Path, **kwargs: Any) -> Path:
    text = plan_from_run(db, run_id, **kwargs)
    try:
        paths.write_new(out, text)
    except FileExistsError:
        raise WhatIfError(f"{out} already exists; choose another --out") from None
    except OSError as exc:
        raise WhatIfError(f"cannot write {out}: {exc.strerror}") from None
    return out


# --- plans written from a form (the Models page's What-if dialog) ----------------------------------
# Block drafters propose a whole block in one pass, so their useful N start higher than a
# sequential drafter's, whose every extra position costs one more draft pass.
BLOCK_DRAFTERS = ("dflash", "dspark")
SEQUENTIAL_NS = (1, 3, 5)
BLOCK_NS = (3, 7)
DEFAULT_CONCURRENCY = (1, 16, 64)
# What a what-if sweep can serve: every drafting method except those drafting from the text itself.
METHODS = ("eagle3", "dflash", "dspark", "mtp", "draft_model")


def default_ns(method: str) -> list[int]:
    return list(BLOCK_NS if method in BLOCK_DRAFTERS else SEQUENTIAL_NS)


def drafts_for(target_ref: str) -> list[tuple[str, str | None]]:
    """(method, draft reference) pairs the shipped shapes make for a target: a `shape:NAME` target,
    or a Hub repo id that a target shape mirrors (its shipped drafts fit the real model too).
    A draft of None is the target's own MTP layers."""
    name = target_ref.removeprefix(SHAPE_PREFIX)
    targets = {s.name for s in shapes.ALL if s.role == "target" and (s.name == name or s.repo.lower() == name.lower())}
    return [(p.method, f"{SHAPE_PREFIX}{p.draft}" if p.draft else None) for p in shapes.pairs() if p.target in targets]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetShape:
    """A shipped target shape as the Models page lists it: its name, the Hub repo it mirrors, the
    drafting methods shipped for it, and its notes."""
    name: str
    repo: str
    drafts: tuple[str, ...]
    notes: str


def target_shapes() -> list[TargetShape]:
    """The shipped target shapes, in the order they are shipped."""
    return [TargetShape(name=s.name, repo=s.repo, notes=s.notes,
                        drafts=tuple(p.method for p in shapes.pairs() if p.target == s.name))
            for s in shapes.ALL if s.role == "target"]


def snapshot_with_config(repo_path: Path, revisions: Iterable[str]) -> Path | None:
    """A cached repo's snapshot folder that holds a config.json (what a config-only pull brings):
    a local folder serves without asking the Hub. None when no revision has one."""
    for rev in revisions:
        folder = Path(repo_path) / "snapshots" / rev
        if (folder / "config.json").is_file():
            return folder
    return None


def measured_curve(db_path: Path, run_id: int) -> dict[str, Any]:
    """`curve_from_run` on a results database opened read-only here (a worker thread's own connection)."""
    try:
        db = store.open_db(db_path, readonly=True)
    except store.StoreError as exc:
        raise WhatIfError(f"run {run_id}: {exc}") from None
    try:
        return curve_from_run(db, run_id)
    finally:
        store.close(db)


def plan_text(target_ref: str, methods: list[tuple[str, str | None, list[int], object]],
              concurrency: Sequence[int] = DEFAULT_CONCURRENCY, max_tokens: int = 256, num_prompts: int | dict[str, int] = 64,
              name: str | None = None, max_model_len: int = 2048, workloads: Sequence[str] = ("builtin",),
              temperature: float = 0.0) -> str:
    """A what-if plan as TOML: the target and every (method, draft, N values, acceptance) served with
    dummy weights, each told to accept its curve (any `acceptance =` form the plan takes).
    Not validated here: `workbench.plan.loads` says what is wrong with it, in one line."""
    entries = []
    for method, draft, ns, accepted in methods:
        entry: dict[str, object] = {"method": method}
        if draft:
            entry["draft"] = draft
        entry["n"] = list(ns)
        entry["acceptance"] = accepted
        entries.append(entry)
    short = target_ref.removeprefix(SHAPE_PREFIX).rstrip("/").split("/")[-1] or "model"
    doc = {"name": name or f"what-if-{short}",
           "target": {"model": target_ref, "max_model_len": max_model_len},
           "sweep": {"mode": "what-if"},
           "methods": entries,
           # ignore_eos: every answer runs to max_tokens, so each configuration decodes the same
           # lengths (dummy weights end answers at random).
           "workload": {"names": list(workloads), "num_prompts": num_prompts, "max_tokens": max_tokens,
                        "ignore_eos": True, "concurrency": list(concurrency), "temperature": temperature}}
    return ("# What-if: dummy weights, acceptance imposed per method (per-position, unconditional).\n"
            + tomli_w.dumps(doc))


def write_new(folder: Path, stem: str, text: str) -> Path:
    """Writes `text` as a new plan file in `folder` (stem, then stem-2, ...): never overwrites one."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(1, 1000):
            out = folder / (f"{stem}.toml" if i == 1 else f"{stem}-{i}.toml")
            try:
                paths.write_new(out, text)
                return out
            except FileExistsError:
                continue
    except OSError as exc:
        raise WhatIfError(f"cannot write a plan into {folder}: {exc.strerror or exc}") from None
    raise WhatIfError(f"{folder} already holds too many plans named {stem}")
