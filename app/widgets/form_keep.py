"""How the Experiment form writes a plan back without losing what it does not show.

The form edits a copy of the document it was given: a field it shows is written only when its
value differs from what the form showed when the document was loaded, so every key the form has
no field for (`workload.request_rate`, `sweep.relaunch`, `[server]`, a what-if curve, a profile's
`env`...) and every key it does show but was left alone (`num_prompts = {per_concurrency, min}`,
a saved profile named by `profile = "NAME"`) stays exactly as it was written.

What the form shows for a key the document leaves out is the key's default as the plan schema
declares it (`workbench.plan.schema`), the one the loader gives the runs: the page keeps no copy
of the defaults that could drift from it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from workbench import plan
from workbench.plan.profiles import Profile

# A path into the document, e.g. ("workload", "max_tokens").
Path_ = tuple[str, ...]
ABSENT = None  # a field whose value is None writes no key


def set_path(doc: dict[str, Any], path: Path_, value: object) -> None:
    """Writes `value` at `path` (creating tables on the way); None removes the key."""
    table = doc
    for key in path[:-1]:
        if value is ABSENT and not isinstance(table.get(key), dict):
            return
        table = table.setdefault(key, {})
    if value is ABSENT:
        table.pop(path[-1], None)
    else:
        table[path[-1]] = value


def overlay(source: dict[str, Any], shown: dict[Path_, object], now: dict[Path_, object]) -> dict[str, Any]:
    """A copy of `source` with every field whose value changed since it was shown written in."""
    doc = copy.deepcopy(source)
    for path, value in now.items():
        if path not in shown or shown[path] != value:
            set_path(doc, path, copy.deepcopy(value))
    return doc


def method_entry(source: dict[str, Any] | None, shown: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    """One [[methods]] entry: the loaded entry, with the row's changed fields written in (a field
    the row no longer has, such as a draft for a method that takes none, is removed)."""
    entry = copy.deepcopy(source) if source else {}
    shown = shown or {}
    for key in set(now) | set(shown):
        if key in now and now[key] != shown.get(key, ABSENT):
            entry[key] = copy.deepcopy(now[key])
        elif key not in now and key in shown:
            entry.pop(key, None)
    return entry


def profile_value(source: object, resolved: Profile, shown: dict[str, Any] | None, now: dict[str, Any],
                  controlled: frozenset[str]) -> object:
    """The document's `profile`: as loaded (a table, or the name of a saved profile) while the form's
    settings are those it showed (`shown` None: a profile the form could not show, so never); else
    the loaded profile's own keys the form has no control for (name, docker, hf_cache, env) with the
    form's settings over them. None: the default profile."""
    if now == shown:
        return copy.deepcopy(source)
    if isinstance(source, dict):
        base = source
    else:  # a saved profile (or none): its settings, less those that are the defaults anyway
        base = {k: v for k, v in resolved.to_table().items()
                if v != getattr(Profile(), k) and not (k == "name" and v == resolved.kind)}
    table = {k: copy.deepcopy(v) for k, v in base.items() if k not in controlled}
    table.update(now)
    return None if table == {"kind": "local"} else table


def what_if_adaptive(source: dict[str, Any], adaptive: bool) -> None:
    """A what-if plan cannot become adaptive: said in the form's words rather than the loader's."""
    if adaptive and (source.get("sweep") or {}).get("mode") == "what-if":
        raise plan.PlanError("a what-if sweep runs every N it lists: it cannot be adaptive (uncheck adaptive N)")


def absolute_paths(doc: dict[str, Any], base: Path) -> dict[str, Any]:
    """The document as the runner reads it from another folder: the target, drafts, prompt files
    and a profile's interpreter, where given relative to the plan's folder, made absolute."""

    def absolute(ref: object) -> object:
        if not isinstance(ref, str) or ref.startswith((plan.DEMO_PREFIX, plan.SHAPE_PREFIX)) \
                or Path(ref).expanduser().is_absolute():
            return ref
        candidate = base / ref
        return str(candidate.resolve()) if candidate.exists() else ref

    target = doc.get("target", {})
    if "model" in target:
        target["model"] = absolute(target["model"])
    for entry in doc.get("methods", []):
        if "draft" in entry:
            entry["draft"] = absolute(entry["draft"])
    workload = doc.get("workload", {})
    if isinstance(workload.get("names"), list):
        workload["names"] = [absolute(n) for n in workload["names"]]
    profile = doc.get("profile")
    python = profile.get("python") if isinstance(profile, dict) else None
    if isinstance(profile, dict) and isinstance(python, str) and "/" in python and not python.startswith(("/", "~")):
        profile["python"] = str((base / python).resolve())  # as the loader reads it (profiles.from_table)
    return doc
