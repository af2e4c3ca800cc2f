"""docs/plan-keys.md, written from the plan schema: one table per plan table, a row per key with
its value, default, allowed values and help. `python scripts/plan_keys.py` writes the file, and a
test fails when the committed one differs, so the docs cannot drift from what the loader reads."""

from __future__ import annotations

import json

from workbench.plan import schema

INTRO = """# Plan keys

Every key a plan file may hold, generated from `workbench.plan.schema` (`python scripts/plan_keys.py`
writes this file; a test fails when it differs from the schema). A plan that leaves a key out gets
its default; a value of the wrong type or out of range is refused in one line that names the key.
The launch profile's own keys (`[profile]`) are described with the launch profiles in the README.
"""


def _toml(value: object) -> str:
    """A value as a plan file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _default(k: schema.Key) -> str:
    if k.required:
        return "required"
    if k.default_says:
        return k.default_says
    if k.default is None or k.default in ({}, []):
        return "none"
    return f"`{_toml(k.default)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(name: str) -> str:
    title = {"": "The top level", "methods": "`[[methods]]`"}.get(name, f"`[{name}]`")
    rows = [f"## {title}: {schema.TABLES[name]}", "", "| key | value | default | allowed | what it does |",
            "| --- | --- | --- | --- | --- |"]
    for k in schema.keys(name):
        rows.append("| " + " | ".join(_cell(c) for c in (f"`{k.name}`", k.kind.says, _default(k),
                                                         k.kind.limits(), k.help)) + " |")
    return "\n".join(rows) + "\n"


def document() -> str:
    return "\n".join([INTRO] + [table(name) for name in schema.TABLES])
