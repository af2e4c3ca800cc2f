"""Known draft/target pairs (resources/catalog.toml) and the experiment plan each one starts."""

from __future__ import annotations

from typing import Any
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from workbench import methods, paths, plan
from workbench.plan import schema
from workbench.errors import DraftbenchError

FIELDS = ("name", "draft", "target", "method", "n", "draft_gated", "target_gated", "publisher", "source")


class CatalogError(DraftbenchError, ValueError):
    """A one-line reason the catalog or a pair cannot be used."""


@dataclass(frozen=True)
class Pair:
    name: str
    draft: str
    target: str
    method: str
    n: tuple[int, ...]
    draft_gated: bool
    target_gated: bool
    publisher: str
    source: str

    @property
    def gated(self) -> bool:
        return self.draft_gated or self.target_gated

    @property
    def is_demo(self) -> bool:
        return self.target.startswith(plan.DEMO_PREFIX)

    def page_url(self, which: str = "draft") -> str | None:
        repo = self.draft if which == "draft" else self.target
        return None if repo.startswith(plan.DEMO_PREFIX) else f"https://huggingface.co/{repo}"


def catalog_path() -> Path:
    return paths.resources_dir() / "catalog.toml"


def user_catalog_path() -> Path:
    """Pairs added on this machine (`draftbench train` registers its drafts here)."""
    return paths.config_dir() / "catalog.toml"


def add_user_pair(entry: dict[str, Any]) -> None:
    """Adds (or replaces, by name) a pair in the user's catalog, which `load` reads after the
    shipped one."""
    path = user_catalog_path()
    doc = tomllib.loads(path.read_text()) if path.exists() else {}
    pairs = [p for p in doc.get("pair", []) if p.get("name") != entry["name"]] + [entry]
    path.parent.mkdir(parents=True, exist_ok=True)
    paths.write_atomic(path, "# Draft/target pairs trained or added on this machine.\n" + tomli_w.dumps({"pair": pairs}))


def load(path: Path | None = None) -> list[Pair]:
    """The shipped catalog followed by the user's, or only the file named."""
    if path is None:
        pairs = _load(catalog_path())
        if user_catalog_path().exists():
            pairs += _load(user_catalog_path())
        names = [p.name for p in pairs]
        if len(set(names)) != len(names):
            raise CatalogError(f"{user_catalog_path()} names a pair the shipped catalog already has")
        return pairs
    return _load(path)


def _load(path: Path) -> list[Pair]:
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"cannot read the catalog {path.name}: {exc}") from None
    pairs = []
    for i, entry in enumerate(doc.get("pair", []), 1):
        missing = [f for f in FIELDS if f not in entry]
        if missing:
            raise CatalogError(f"catalog pair #{i} lacks {missing[0]!r}")
        methods.get(entry["method"])
        pairs.append(Pair(**{f: entry[f] for f in FIELDS if f != "n"}, n=tuple(entry["n"])))
    names = [p.name for p in pairs]
    if len(set(names)) != len(names):
        raise CatalogError("the catalog names a pair twice")
    return pairs


def get(name: str, pairs: list[Pair] | None = None) -> Pair:
    pairs = pairs if pairs is not None else load()
    for p in pairs:
        if p.name == name:
            return p
    close = [p.name for p in pairs if name.lower() in p.name.lower()]
    hint = f"; did you mean {', '.join(close[:3])}?" if close else "; `draftbench catalog` lists them"
    raise CatalogError(f"no pair named {name!r} in the catalog{hint}")


def for_target(target: str, pairs: list[Pair] | None = None) -> list[Pair]:
    """The published drafts for a target repo (case-insensitive, as the Hub treats repo ids)."""
    return [p for p in (pairs if pairs is not None else load()) if p.target.lower() == target.lower()]


# What a published pair's plan changes from the schema's defaults: sized for the GPU its target
# needs (a longer context, more prompts and tokens, more concurrency), or for the demo's CPU.
GPU_SIZED: dict[str, dict[str, object]] = {
    "target": {"max_model_len": 4096},
    "workload": {"num_prompts": 32, "max_tokens": 256, "concurrency": [1, 8]}}
DEMO_SIZED: dict[str, dict[str, object]] = {
    "target": {},
    "workload": {"num_prompts": 8, "max_tokens": 64, "concurrency": [1, 4]}}


def plan_document(pair: Pair) -> dict[str, Any]:
    """A plan (as a TOML document) that sweeps the pair's recommended N values against the baseline:
    the keys the schema marks for a new plan, at their defaults but where the pair's size says."""
    sized = DEMO_SIZED if pair.is_demo else GPU_SIZED
    target: dict[str, object] = {"model": pair.target, **schema.new_plan_values("target"), **sized["target"]}
    if pair.is_demo:
        # No dtype: the loader serves the demo target in whichever dtype is faster on this CPU.
        del target["dtype"]
        target.update(served_name="smollm2", enforce_eager=True)
    doc: dict[str, Any] = {
        "name": pair.name,
        "target": target,
        "methods": [{"method": pair.method, "draft": pair.draft, "n": list(pair.n)}],
        "workload": schema.new_plan_values("workload") | sized["workload"],
    }
    if pair.is_demo:
        doc["server"] = {"health_timeout_s": 300}
    return doc


def _value(v: object) -> str:
    # Flat values only: strings, numbers, booleans and lists of them, which TOML writes as JSON does.
    return ("true" if v else "false") if isinstance(v, bool) else json.dumps(v)


def plan_text(pair: Pair) -> str:
    """The plan as a TOML file a person would write: short inline arrays, one table per section."""
    doc = plan_document(pair)
    lines = [f"# {pair.draft} drafting for {pair.target} ({pair.method}); from {pair.source}",
             f"name = {_value(doc['name'])}"]
    for key, table in doc.items():
        if isinstance(table, dict):
            lines += ["", f"[{key}]"] + [f"{k} = {_value(v)}" for k, v in table.items()]
        elif isinstance(table, list):
            for item in table:
                lines += ["", f"[[{key}]]"] + [f"{k} = {_value(v)}" for k, v in item.items()]
    text = "\n".join(lines) + "\n"
    plan.loads(text)  # a catalog pair always makes a valid plan
    return text
