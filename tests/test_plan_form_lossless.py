"""The Experiment page loses nothing of a plan it shows: every key the plan loader accepts, shown by
a field or not, reaches the runner as it was written, and a field changed on the form changes only
its own key."""

from __future__ import annotations

import ast
import inspect
import tomllib
from dataclasses import asdict

import pytest

from app.pages.experiment import ExperimentPage
from workbench import plan
from workbench.host import engine
from workbench.plan import loader, profiles, schema

# Every table the loader reads, by the name its source gives the table (a new table read under
# another name fails test_the_plans_use_every_key_the_loader_reads until it is named here).
TABLES = {"doc": "", "target_t": "target", "server_t": "server", "sweep_t": "sweep", "w": "workload",
          "prompts_t": "workload.num_prompts", "m": "methods"}

# A what-if sweep in a docker profile: every key but those of an attached server.
WHAT_IF = """
name = "lossless-what-if"
[target]
model = "org/target"
served_name = "tgt"
max_model_len = 4096
dtype = "bfloat16"
extra_args = ["--seed", "7"]
enforce_eager = true
[server]
env = { VLLM_LOGGING_LEVEL = "DEBUG" }
health_timeout_s = 900
per_request_metrics = false
[profile]
name = "mi300x"
kind = "docker"
platform = "rocm"
python = "/opt/vllm/bin/python"
tensor_parallel_size = 2
draft_tensor_parallel_size = 2
gpus = [2, 3]
rocm_use_aiter = true
attention_backend = "TRITON_ATTN"
image = "vllm/vllm-openai-rocm:v0.32"
docker = "podman"
hf_cache = "/data/hf"
env = { HIP_FORCE_DEV_KERNARG = "1" }
[sweep]
mode = "what-if"
relaunch = true
parallel = 2
baseline = false
[workload]
names = ["builtin:function_completion", "random"]
concurrency = [1, 8]
request_rate = 4.5
repeats = 2
num_prompts = { per_concurrency = 3, min = 5 }
max_tokens = 96
temperature = 0
top_p = 0.9
warmup = 1
ignore_eos = true
[[methods]]
method = "eagle3"
draft = "org/draft-eagle3"
n = [1, 3]
options = { draft_tensor_parallel_size = 2 }
optional = true
acceptance = { p1 = 0.8, decay = 0.7 }
"""

# An attached server, adaptive: the keys only an attach profile takes.
ATTACH = """
name = "lossless-attach"
[target]
model = "org/target"
[profile]
kind = "attach"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "MY_VLLM_KEY"
[sweep]
mode = "adaptive"
parallel = 1
baseline_retries = 2
without_baseline = "run"
[workload]
names = ["builtin"]
concurrency = 4
num_prompts = 12
temperature = 0.3
repeats = "auto"
repeats_target = 0.05
repeats_max = 4
[[methods]]
method = "baseline"
[[methods]]
method = "ngram"
n = 3
options = { prompt_lookup_min = 2, prompt_lookup_max = 4 }
"""

# A saved profile named by the plan; what the form shows left at the loader's defaults.
SAVED = """
profile = "rig"
[target]
model = "org/target"
[workload]
temperature = 0.0
[[methods]]
method = "ngram"
n = [2, 4]
"""
PLANS = {"what-if": WHAT_IF, "attach": ATTACH, "saved-profile": SAVED}


def loader_keys() -> set[str]:
    """Every key the plan loader reads, as `table.key`: those declared in the schema, those its
    source reads by name (the two of a num_prompts table, profile keys from the Profile it builds):
    the list grows as the schema and the loader do."""
    tree = ast.parse(inspect.getsource(loader))
    keys: set[str] = {k.dotted for k in schema.keys()} | set(schema.top_level())
    keys |= {"workload.num_prompts.per_concurrency", "workload.num_prompts.min"}

    def add(var, key) -> None:
        if isinstance(var, ast.Name) and isinstance(key, ast.Constant) and isinstance(key.value, str):
            assert var.id in TABLES, f"the loader reads a table named {var.id!r}: add it to TABLES"
            keys.add(f"{TABLES[var.id]}.{key.value}".lstrip("."))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in TABLES and node.args:
            add(node.func.value, node.args[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_number":
            add(node.args[0], node.args[1])
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in TABLES:
            add(node.value, node.slice)
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and isinstance(node.comparators[0], ast.Name) and node.comparators[0].id in TABLES:
            add(node.comparators[0], node.left)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.right, ast.Set) \
                and isinstance(node.left, ast.Call) and node.left.args:  # set(table) - {known keys}
            for key in node.right.elts:
                add(node.left.args[0], key)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Set) \
                and any(isinstance(t, ast.Name) and t.id == "known" for t in node.targets):  # the top level
            for key in node.value.elts:
                add(ast.Name("doc"), key)
    keys |= {f"profile.{name}" for name in profiles.Profile.__dataclass_fields__}
    return keys


def used_keys(doc: dict, prefix: str = "") -> set[str]:
    out = set()
    for key, value in doc.items():
        out.add(f"{prefix}{key}")
        if key == "methods":
            for entry in value:
                out |= {f"methods.{k}" for k in entry}
        elif isinstance(value, dict) and key in ("target", "server", "profile", "sweep", "workload") or \
                key == "num_prompts" and isinstance(value, dict):
            out |= used_keys(value, f"{prefix}{key}.")
    return out


@pytest.fixture
def saved_rig():
    profiles.save(profiles.Profile(name="rig", kind="local", platform="cuda", gpus=(1,), docker="nerdctl",
                                   env=(("NCCL_P2P_DISABLE", "1"),)))
    yield
    profiles.delete("rig")


@pytest.fixture
def page(qtbot, tmp_path, saved_rig):
    vllm = engine.VllmInstall(engine.default_python(), "?", None, None, None, None, None)
    p = ExperimentPage(vllm, set())
    qtbot.addWidget(p)
    return p


def loaded(page, tmp_path, name: str):
    path = tmp_path / f"{name}.toml"
    path.write_text(PLANS[name])
    page.load_file(path)
    return path


def runs(p: plan.Plan) -> list[dict]:
    return [asdict(r) | {"key": r.key} for r in p.runs]


def same_plan(a: plan.Plan, b: plan.Plan) -> None:
    assert runs(a) == runs(b)
    assert (a.name, a.mode, a.parallel, a.health_timeout_s, a.hash) == (b.name, b.mode, b.parallel,
                                                                          b.health_timeout_s, b.hash)


def test_the_plans_use_every_key_the_loader_reads(saved_rig):
    expected = loader_keys()
    assert {"workload.request_rate", "sweep.relaunch", "server.env", "profile.hf_cache"} <= expected  # the scan works
    used = set().union(*(used_keys(tomllib.loads(text)) for text in PLANS.values()))
    assert expected - used == set(), f"add these keys to a plan here: {sorted(expected - used)}"
    for text in PLANS.values():
        plan.loads(text)  # each is a plan the loader accepts


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_plan_reaches_the_runner_as_written(page, tmp_path, name):
    path = loaded(page, tmp_path, name)
    assert page.current is not None, page.status.text()
    for text in (page.text_for_run(), page.text()):
        same_plan(plan.loads(text, base=tmp_path), plan.load(path))
    # Saved and opened again, it is still the same plan.
    again = tmp_path / "again.toml"
    page.save_file(again)
    page.load_file(again)
    same_plan(plan.loads(page.text_for_run()), plan.load(path))


def test_a_changed_field_changes_its_key_only(page, tmp_path):
    path = loaded(page, tmp_path, "what-if")
    page.max_tokens.setValue(48)
    page.profile_form.gpus.setText("4, 5")
    page.rows[0].n.setText("1, 2, 3")
    changed = plan.loads(page.text_for_run())
    assert {r.max_tokens for r in changed.runs} == {48} and {r.request_rate for r in changed.runs} == {4.5}
    assert {r.server.profile.gpus for r in changed.runs} == {(4, 5)}
    assert {r.server.profile.hf_cache for r in changed.runs} == {"/data/hf"}
    doc, written = tomllib.loads(page.text_for_run()), tomllib.loads(path.read_text())
    assert doc["workload"].pop("max_tokens") == 48 and written["workload"].pop("max_tokens") == 96
    assert doc["methods"][0].pop("n") == [1, 2, 3] and written["methods"][0].pop("n") == [1, 3]
    # The profile keeps the keys the form has no control for (its name, client, cache and env).
    assert doc["profile"].pop("gpus") == [4, 5] and written["profile"].pop("gpus") == [2, 3]
    assert doc == written


def test_absent_keys_stay_absent_and_the_form_shows_the_loaders_defaults(page, tmp_path):
    loaded(page, tmp_path, "saved-profile")
    p = plan.loads(SAVED)
    r = p.runs[0]
    assert page.max_model_len.value() == r.server.max_model_len and page.dtype.currentText() == r.server.dtype
    assert (page.num_prompts.value(), page.max_tokens.value(), page.warmup.value(), page.top_p.value()) == \
        (r.num_prompts, r.max_tokens, r.warmup, r.top_p)
    # The saved profile shows on the form and stays named, not copied into the plan.
    assert page.profile_form.platform.currentText() == "cuda" and page.profile_form.gpus.text() == "1"
    assert tomllib.loads(page.text()) == tomllib.loads(SAVED) | {"name": "saved-profile"}
    page.ignore_eos.setChecked(True)
    page.ignore_eos.setChecked(False)  # back as it was: still no key
    assert "ignore_eos" not in tomllib.loads(page.text())["workload"]
    page.profile_form.gpus.setText("0")  # a changed profile keeps what the form has no control for
    assert tomllib.loads(page.text())["profile"] == {"name": "rig", "kind": "local", "platform": "cuda", "gpus": [0],
                                                     "docker": "nerdctl", "env": {"NCCL_P2P_DISABLE": "1"}}


def test_a_what_if_plan_cannot_become_adaptive_in_one_line(page, tmp_path):
    loaded(page, tmp_path, "what-if")
    page.adaptive.setChecked(True)
    assert page.validate() is None and "cannot be adaptive" in page.status.text()
    page.adaptive.setChecked(False)
    assert page.validate() is not None and page.current.mode == "what-if"
