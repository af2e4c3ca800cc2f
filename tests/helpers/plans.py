"""One builder for the plans the tests and the benchmarks run: the demo model, a small workload, the
methods asked for. Each caller says only what differs from the demo plan, so a change to the plan
format is made here once (bench/ imports this module too).

A table argument is merged onto its defaults; a key given None is left out. A table with no keys
is not written."""

from __future__ import annotations

import json

DEMO_TARGET = "demo:smollm2-135m"
NOISY_DRAFT = "demo:smollm2-135m-draft-noisy-copy"

TARGET = {"model": DEMO_TARGET, "served_name": "smollm2", "enforce_eager": True}
# Small enough for a sweep on 2 CPU cores to take seconds per run, greedy so runs repeat.
WORKLOAD = {"num_prompts": 6, "max_tokens": 40, "warmup": 1, "concurrency": [2], "temperature": 0.0}
# The two methods most tests measure: n-gram lookup and the demo draft model.
NGRAM = {"method": "ngram", "n": 3, "options": {"prompt_lookup_min": 2, "prompt_lookup_max": 4}}
DRAFT = {"method": "draft_model", "draft": NOISY_DRAFT, "n": 2}


def value(v) -> str:
    """One TOML value: strings through JSON, whose escapes TOML's basic strings share."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }" if v else "{}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    return json.dumps(str(v))  # a Path


def merged(defaults: dict | None, overrides: dict | None) -> dict:
    out = {**(defaults or {}), **(overrides or {})}
    return {k: v for k, v in out.items() if v is not None}


def table(header: str, keys: dict) -> str:
    return f"[{header}]\n" + "".join(f"{k} = {value(v)}\n" for k, v in keys.items())


def demo_plan(name: str = "demo", *, methods=(), target: dict | None = None, workload: dict | None = None,
              profile: dict | None = None, sweep: dict | None = None, server: dict | None = None) -> str:
    """The TOML text of a plan on the demo model; `methods` are [[methods]] tables, in order."""
    parts = [f"name = {value(name)}\n", table("target", merged(TARGET, target))]
    for section, keys in (("profile", profile), ("sweep", sweep), ("server", server)):
        if keys := merged(None, keys):
            parts.append(table(section, keys))
    parts += [table("[methods]", merged(None, m)) for m in methods]
    parts.append(table("workload", merged(WORKLOAD, workload)))
    return "".join(parts)


def attach_plan(url: str, draft, api_key_env: str = "STANDIN_KEY", name: str = "stand-in",
                workload: dict | None = None) -> str:
    """The demo draft model measured on a server already running at `url` (the vLLM stand-in)."""
    return demo_plan(name, target={"enforce_eager": None},
                     profile={"kind": "attach", "base_url": url, "api_key_env": api_key_env},
                     methods=[{"method": "draft_model", "draft": str(draft), "n": 3}], workload={"max_tokens": 32, **(workload or {})})
