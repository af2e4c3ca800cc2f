"""The plan schema: every key declared once (workbench.plan.schema) and read through it by the
loader, with the hashes of existing plans and the loader's one-line refusals unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench import plan
from workbench.plan import catalog, keys_doc, schema

from test_plan_form_lossless import ATTACH, WHAT_IF

# Plans of every key but an attached server's, hashed before the loader read through the schema:
# a plan's hash names its experiment, so a sweep of an existing plan must find its runs again.
EVERY_WORKLOAD_KEY = """
name = "every-workload-key"
[target]
model = "org/target"
max_model_len = 8192
dtype = "float16"
[server]
health_timeout_s = 100
per_request_metrics = false
[sweep]
relaunch = true
baseline_retries = 3
without_baseline = "run"
[workload]
names = ["builtin", "random"]
concurrency = [2, 16]
request_rate = 3
repeats = 3
num_prompts = 40
max_tokens = 300
temperature = 0.7
top_p = 0.95
warmup = 0
[[methods]]
method = "ngram"
n = [1, 5]
"""
HASHES = {"what-if": (WHAT_IF, "ac87220e95fdf824"), "attach": (ATTACH, "40b992ba8b229b7b"),
          "every-workload-key": (EVERY_WORKLOAD_KEY, "1a1c7fc4a8db16fe")}
PAIR_HASHES = {"qwen3-8b-dflash-b16": "8d274c365fe81076", "qwen3-8b-speculator-eagle3": "c36256b0fa879f93",
               "gemma-4-26b-a4b-assistant": "ccd57835e0957ad6", "deepspec-dspark-qwen3-8b": "0f7be88c496b38bc"}


@pytest.mark.parametrize("name", sorted(HASHES))
def test_existing_plans_keep_their_hashes(name):
    text, expected = HASHES[name]
    assert plan.loads(text).hash == expected


@pytest.mark.parametrize("name", sorted(PAIR_HASHES))
def test_new_plans_of_a_pair_keep_their_hashes(name):
    assert plan.loads(catalog.plan_text(catalog.get(name))).hash == PAIR_HASHES[name]


BASE = '[target]\nmodel = "org/t"\n[workload]\ntemperature = 0.0\n'


@pytest.mark.parametrize("edit,message", [
    (("[target]", "[target]\nmax_model_len = \"long\""), "target.max_model_len must be a whole number, not 'long'"),
    (("[target]", "[target]\nmax_model_len = 32"), "target.max_model_len must be between 64 and 1e+07, not 32"),
    (("[target]", "[target]\nextra_args = [\"--port\", 1]"), "target.extra_args must hold strings, not 1"),
    (("[workload]", "[workload]\nconcurrency = []"), "workload.concurrency is empty"),
    (("[workload]", "[workload]\nconcurrency = \"four\""), "workload.concurrency must hold whole numbers, not 'four'"),
    (("[workload]", "[workload]\nrepeats = \"often\""), 'workload.repeats must be a number or "auto", not \'often\''),
    (("[workload]", "[workload]\nrepeats_max = 3"), 'workload.repeats_max applies only with repeats = "auto"'),
    (("[workload]", "[workload]\nrepeats = \"auto\"\nrepeats_target = 0.9"),
     "workload.repeats_target must be between 0.001 and 0.5, not 0.9"),
    (("[workload]", "[workload]\nnum_prompts = {min = 2}"),
     "workload.num_prompts must be a number or {per_concurrency = K, min = M}"),
    (("[workload]", "[workload]\nnum_prompts = {per_concurrency = 0}"),
     "workload.num_prompts.per_concurrency must be between 1 and 10000, not 0"),
    (("[workload]", "[workload]\nrequest_rate = 0"), "workload.request_rate must be between 0.01 and 100000, not 0"),
    (("temperature = 0.0\n", ""), "workload.temperature must be set: acceptance depends on it"),
    (("[target]", "[sweep]\nmode = \"greedy\"\n[target]"),
     "sweep.mode must be one of exhaustive, adaptive, what-if, not 'greedy'"),
    (("[target]", "[sweep]\nwithout_baseline = \"go\"\n[target]"),
     'sweep.without_baseline must be "skip" or "run", not \'go\''),
    (("[target]", "[sweep]\nrelaunch = 1\n[target]"), "sweep.relaunch must be true or false"),
    (("[target]", "[sweep]\nparallel = 0\n[target]"),
     'sweep.parallel must be "auto" or a whole number of at least 1, not 0'),
    (("[target]", "[sweep]\nspeed = 1\n[target]"), "sweep: unknown key 'speed'; expected mode, relaunch, parallel, "
     "baseline, baseline_retries or without_baseline"),
    (("[target]", "speed = 1\n[target]"), "unknown top-level key 'speed'; expected methods, name, profile, server, "
     "sweep, target, workload"),
    (("[target]", "[server]\nenv = 3\n[target]"), "server.env must be a table of NAME = value"),
    (("model = \"org/t\"", "model = 7"), "target.model must be a model folder or a Hugging Face repo id"),
    (("[target]\nmodel = \"org/t\"", "[target]"), "the plan needs a [target] table with `model = ...`"),
    # Keys once read as Python's truth of whatever they held are now checked as their type is.
    (("[target]", "[target]\nenforce_eager = \"false\""), "target.enforce_eager must be true or false"),
    (("[target]", "[server]\nper_request_metrics = \"no\"\n[target]"), "server.per_request_metrics must be true or false"),
    (("[target]", "[target]\nserved_name = 3"), "target.served_name must be a string, not 3"),
    (("[target]", "name = 2024\n[target]"), "name must be a string, not 2024"),
])
def test_each_refusal_is_the_loaders_one_line(edit, message):
    old, new = edit
    with pytest.raises(plan.PlanError) as err:
        plan.loads(BASE.replace(old, new, 1))
    assert str(err.value).startswith(message), str(err.value)


def test_the_plan_carries_every_declared_key_with_its_default():
    p = plan.loads(BASE)
    declared = {k.dotted for k in schema.keys() if k.table != "methods"}
    assert set(p.settings) == declared
    assert p.settings["workload.max_tokens"] == 128 and p.settings["server.env"] == ()
    assert p.settings["workload.request_rate"] is None and p.settings["sweep.mode"] == "exhaustive"
    r = p.runs[0]
    assert (r.max_tokens, r.warmup, r.top_p, r.server.max_model_len) == (
        schema.key("workload.max_tokens").default, schema.key("workload.warmup").default,
        schema.key("workload.top_p").default, schema.key("target.max_model_len").default)


def test_every_key_has_help_and_a_known_table():
    for k in schema.keys():
        assert k.table in schema.TABLES and k.help.strip(), k.dotted
    dotted = [k.dotted for k in schema.keys()]
    assert len(dotted) == len(set(dotted)), "a key declared twice"


def test_the_committed_key_table_is_the_generated_one():
    committed = (Path(__file__).resolve().parent.parent / "docs" / "plan-keys.md").read_text()
    assert committed == keys_doc.document(), "the schema changed: run python scripts/plan_keys.py"


def test_a_new_plan_writes_the_schemas_defaults_but_where_its_pair_is_sized():
    doc = catalog.plan_document(catalog.get("qwen3-8b-dflash-b16"))
    assert doc["workload"]["names"] == schema.key("workload.names").default
    assert doc["workload"]["temperature"] == schema.key("workload.temperature").default
    assert doc["target"]["dtype"] == schema.key("target.dtype").default
    assert doc["workload"]["max_tokens"] == catalog.GPU_SIZED["workload"]["max_tokens"]
    assert set(doc["workload"]) == {k.name for k in schema.keys("workload") if k.new}
