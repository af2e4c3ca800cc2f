"""The types of the plan keys the Experiment form shows, checked when a plan file is opened.

A value of the wrong type (`concurrency = "eight"`, `max_model_len = "long"`) is refused in one
line that names its key and the type it needs, worded as the plan loader words its own checks,
before the form converts anything: the user never meets a Python conversion error, and the form
keeps what it showed. What a value of the right type may be (a range, a known model, a method's
options) stays the loader's to say (`workbench.plan`), through the page's preflight."""

from __future__ import annotations

from typing import Any

from workbench.plan import PlanError, kinds, schema


def _tables() -> list[str]:
    """The tables the form reads into its fields (those of the schema but the top level and
    [[methods]]); in each, the keys the schema labels for the form are checked, as their kind says."""
    return [t for t in schema.TABLES if t not in ("", "methods")]


def _check(value: object, kind: kinds.Kind, where: str) -> None:
    if not kind.fits(value):
        raise PlanError(f"{where} must be {kind.says}, not {_shown(value)}")


def _shown(value: object) -> str:
    """The value as the plan file writes it: "eight" with TOML's double quotes, not Python's."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def check(doc: dict[str, Any]) -> None:
    """Raises PlanError on the first key the form shows whose value has the wrong type."""
    for key in schema.keys(""):
        if key.label and key.name in doc:
            _check(doc[key.name], key.kind, key.name)
    for table in _tables():
        if table not in doc:
            continue
        if not isinstance(doc[table], dict):
            raise PlanError(f"[{table}] must be a table, not {_shown(doc[table])}")
        for key in schema.keys(table):
            if key.label and key.name in doc[table]:
                _check(doc[table][key.name], key.kind, f"{table}.{key.name}")
    methods = doc.get("methods", [])
    if not isinstance(methods, list) or not all(isinstance(m, dict) for m in methods):
        raise PlanError("methods must be an array of tables: [[methods]]")
    for i, entry in enumerate(methods, 1):
        for key in schema.keys("methods"):
            if key.label and key.name in entry:
                _check(entry[key.name], key.kind, f"methods #{i}: {key.name}")
