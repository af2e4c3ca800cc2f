"""What-if sweeps: a plan whose servers run with dummy weights and an imposed acceptance curve.

The plan, the launch and the analysis are checked as our own logic; the sweep itself goes through
the real runner against the vLLM stand-in started exactly as vLLM would be, which draws every
step's acceptance from the imposed curve as vLLM's synthetic rejection sampler does (vLLM's CPU
build cannot impose acceptance; a GPU build can). The CPU build is what refuses the plan."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import launch, plan, store
from workbench.analysis import answer, breakeven, compare
from workbench.plan import acceptance, curves
from workbench.sweep import runner
from workbench.usecases import findings

SCRIPT = Path(__file__).parent / "helpers" / "standins" / "vllm_server.py"
IMPOSED = [0.8, 0.6, 0.45]
PLAN = """
name = "what-if"
[target]
model = "demo:smollm2-135m"
served_name = "smollm2"
enforce_eager = true
[sweep]
mode = "what-if"
[[methods]]
method = "draft_model"
draft = "demo:smollm2-135m-draft-noisy-copy"
n = {n}
acceptance = {acceptance}
[workload]
num_prompts = {num_prompts}
max_tokens = 48
warmup = 1
concurrency = [4]
temperature = 0.0
"""


def _plan(n="3", acc=json.dumps(IMPOSED), num_prompts=48, **extra) -> plan.Plan:
    text = PLAN.format(n=n, acceptance=acc, num_prompts=num_prompts)
    for old, new in extra.items():
        text = text.replace(old, new)
    return plan.loads(text)


# --- the plan ----------------------------------------------------------------------------------
def test_a_what_if_plan_serves_dummy_weights_with_the_imposed_curve(demo_models, vllm_install):
    p = _plan(n="[1, 3]")
    servers = [s for s, _ in p.servers()]
    assert [s.method for s in servers] == ["baseline", "draft_model", "draft_model"]
    assert all(s.what_if for s in servers)
    assert servers[0].imposed is None
    assert servers[1].imposed == (0.8,) and servers[2].imposed == (0.8, 0.6, 0.45)  # N_max's curve serves N=1
    spec = launch.prepare(servers[2], vllm_install, 0)
    assert spec.vllm_args[spec.vllm_args.index("--load-format") + 1] == "dummy"
    config = json.loads(spec.vllm_args[spec.vllm_args.index("--speculative-config") + 1])
    assert config["rejection_sample_method"] == "synthetic" and config["synthetic_acceptance_rates"] == IMPOSED
    base = launch.prepare(servers[0], vllm_install, 0).vllm_args
    assert "--load-format" in base and "--speculative-config" not in base
    # A measured plan's keys are as they were before what-if existed.
    measured = plan.loads(PLAN.format(n=3, acceptance="[0.5]", num_prompts=4)
                          .replace('mode = "what-if"', "").replace("acceptance = [0.5]", ""))
    assert not any(s.what_if for s, _ in measured.servers())
    assert "what_if" not in json.dumps([r.key for r in measured.runs])


@pytest.mark.parametrize("acc, n, expected", [
    ('{ p1 = 0.8, decay = 0.5 }', 3, (0.8, 0.4, 0.2)),
    ('{ mal = 2.6 }', 3, (1.0, 0.6, 0.0)),            # vLLM's resolution of synthetic_acceptance_length
    ('{ rates = [0.9, 0.7], source = "measured: run 12" }', 2, (0.9, 0.7)),
    ('{ published = "reference-study/gemma-4-26b-a4b-it/mtp/gsm8k" }', 3, (0.944, 0.878, 0.814)),
])
def test_every_source_of_a_curve_resolves(demo_models, acc, n, expected):
    p = _plan(n=str(n), acc=acc)
    server = [s for s, _ in p.servers()][-1]
    assert server.imposed == pytest.approx(expected)
    assert server.imposed_source


def test_a_published_curve_at_an_n_it_has_is_that_n_s_own():
    table = curves.get("reference-study/gemma-4-26b-a4b-it/mtp/gsm8k")
    assert table and table.target == "google/gemma-4-26B-A4B-it" and "MI300X" in table.citation
    curve = acceptance.parse({"published": table.key}, 5, "acc")
    assert curve.for_n(2) == (0.946, 0.883) and curve.for_n(5) == table.by_n[5]


@pytest.mark.parametrize("acc, n, extra, message", [
    ("[0.5, 0.7]", 2, {}, "must not increase"),
    ("[0.8]", 3, {}, "too few for N=3"),
    ("[1.5]", 1, {}, "between 0 and 1"),
    ("{ mal = 5.0 }", 3, {}, "impossible at N=3"),
    ('{ published = "nope" }', 1, {}, "no published curve"),
    ("{ p1 = 0.8 }", 1, {}, "must be a list of rates, or a table"),
    ("[0.5]", 1, {'method = "draft_model"': 'method = "ngram"', 'draft = "demo:smollm2-135m-draft-noisy-copy"': ""},
     "not a what-if method"),
    ("[0.5]", 1, {"acceptance = [0.5]": ""}, "needs `acceptance`"),
    ("[0.5]", 1, {'mode = "what-if"': ""}, "only in a what-if sweep"),
])
def test_a_bad_what_if_plan_is_refused_in_one_line(demo_models, acc, n, extra, message):
    with pytest.raises(plan.PlanError) as err:
        _plan(n=str(n), acc=acc, **extra)
    assert message in str(err.value) and "\n" not in str(err.value)


# --- the CPU build refuses, before anything starts -----------------------------------------------
def test_the_cpu_build_refuses_a_what_if_plan_before_anything_is_launched(demo_models, vllm_install, tmp_path):
    assert vllm_install.build == "cpu"
    found = findings.preflight(_plan(), vllm_install)
    assert [f.level for f in found] == [findings.ERROR]
    assert "CPU build" in str(found[0]) and "Synthetic acceptance not supported" in str(found[0])
    path = tmp_path / "what-if.toml"
    path.write_text(PLAN.format(n=3, acceptance=json.dumps(IMPOSED), num_prompts=4))
    db = tmp_path / "results.sqlite"
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "run", str(path), "--db", str(db)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "what-if sweep needs a vLLM that can impose acceptance" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    # Nothing launched, nothing recorded.
    if db.exists():
        conn = store.open_db(db, readonly=True)
        try:
            assert store.runs(conn) == []
        finally:
            store.close(conn)


# --- a what-if sweep through the real runner ------------------------------------------------------
@pytest.fixture(scope="module")
def swept(demo_models, vllm_install, tmp_path_factory):
    db_path = tmp_path_factory.mktemp("what-if") / "results.sqlite"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(launch.vllm_cli, "argv", lambda python, args: [sys.executable, str(SCRIPT), *args])
        r = runner.Runner(_plan(), str(db_path), vllm_install, emit=lambda e: None, scrape_interval_s=0.1)
        summary = r.run()
        r.db.conn.close()
    db = store.open_db(db_path, readonly=True)
    rows = store.runs(db)
    store.close(db)
    return summary, rows


def test_the_imposed_curve_is_read_back_from_the_counters(swept):
    summary, rows = swept
    assert summary["completed"] == 2 and summary["failed"] == 0
    spec = next(r for r in rows if r.method == "draft_model")
    base = next(r for r in rows if r.method == "baseline")
    assert spec.drafts >= 500, spec.drafts
    assert spec.mal == pytest.approx(acceptance.mal_of(IMPOSED), rel=0.03)
    per_position = spec.per_position
    assert len(per_position) == 3
    assert all(abs(got - want) <= 0.03 for got, want in zip(per_position, IMPOSED)), per_position
    # Stored as what-if, with the curve and where it came from; the baseline too (dummy weights).
    assert spec.what_if == 1 and base.what_if == 1
    imposed = json.loads(spec.imposed)
    assert imposed["rates"] == IMPOSED and imposed["source"] == "typed" and imposed["mal"] == 2.85
    assert base.imposed is None and not base.drafts
    assert "--load-format dummy" in spec.command and "synthetic" in spec.command


def test_what_if_runs_stay_out_of_the_measured_tables(swept):
    _, rows = swept
    cs = compare.configs(rows)
    assert compare.speedup_table(cs) == []
    assert answer.answer_rows(cs) == []
    table = compare.speedup_table(cs, what_if=True)
    assert len(table) == 1 and table[0].what_if and table[0].imposed_source == "typed"
    spec = next(c for c in cs if c.method != "baseline")
    assert spec.label == "draft_model N=3 (what-if)"
    # A measured baseline of the same target is never the what-if run's baseline.
    measured_base = [dataclasses.replace(r, what_if=0, id=r.id + 1000, key="m" + r.key, output_tok_s=1.0)
                     for r in rows if r.method == "baseline"]
    mixed = compare.configs(rows + measured_base)
    spec = next(c for c in mixed if c.method != "baseline")
    assert spec.baseline.what_if and spec.baseline.tok_s.mean != 1.0


def test_break_even_follows_from_the_step_cost(swept):
    _, rows = swept
    cs = compare.configs(rows)
    [row] = breakeven.rows(cs)
    assert row.step_cost == pytest.approx(row.mal / row.speedup)
    assert row.break_even_mal == pytest.approx(row.step_cost)
    r = breakeven.shape(IMPOSED)
    if row.break_even_p1 is not None:
        assert 1 + row.break_even_p1 * sum(r) == pytest.approx(row.step_cost)
    points = breakeven.curve(row)
    at_imposed = min(points, key=lambda p: abs(p.p1 - 0.8))
    assert at_imposed.speedup == pytest.approx(acceptance.mal_of(IMPOSED) / row.step_cost, rel=1e-6)
    [text] = breakeven.sentences(cs)
    assert text.startswith("draft_model N=3")


def test_break_even_in_known_cases():
    """A step costing 2 baseline steps pays from MAL 2: with the shape [1, .75, .5] (sum 2.25),
    from p1 = 1/2.25; one costing more than N+1 never pays."""
    class Fake:
        def __init__(self, cost, c):
            self.what_if, self.method, self.draft, self.n, self.workload = True, "eagle3", "d", 3, "w"
            self.target, self.concurrency, self.label = "t", c, "eagle3 N=3 (what-if)"
            self.imposed = {"rates": [0.8, 0.6, 0.4], "mal": 2.8, "source": "typed"}
            self.mal = compare.estimate([2.8])
            self.tok_s = compare.estimate([100.0])
            self.baseline = type("B", (), {"tok_s": compare.estimate([100.0 * cost / 2.8])})()
            self.speedup, self.speedup_ci95, self.per_position = 2.8 / cost, None, [0.8, 0.6, 0.4]
            self.beyond_noise = None

    rows = breakeven.rows([Fake(2.0, 1), Fake(5.0, 64)])
    assert rows[0].break_even_p1 == pytest.approx(1 / 2.25) and rows[0].pays_ever
    assert not rows[1].pays_ever
    assert breakeven.sentences([Fake(2.0, 1), Fake(5.0, 64)]) == [
        "eagle3 N=3 pays at c <= 1 once position 1 accepts >= 0.44; not at c = 64"]
    assert breakeven.sentences([Fake(5.0, 64)])[0].startswith("eagle3 N=3 does not pay")


def test_a_shape_target_and_prompts_that_scale_with_concurrency(demo_models):
    text = (PLAN.format(n=3, acceptance=json.dumps(IMPOSED), num_prompts=4)
            .replace('"demo:smollm2-135m"', '"shape:qwen3-8b"')
            .replace('method = "draft_model"\ndraft = "demo:smollm2-135m-draft-noisy-copy"',
                     'method = "eagle3"\ndraft = "shape:qwen3-8b-eagle3"')
            .replace("num_prompts = 4", "num_prompts = { per_concurrency = 4, min = 16 }")
            .replace("concurrency = [4]", "concurrency = [1, 16]"))
    p = plan.loads(text)
    assert {(r.concurrency, r.num_prompts) for r in p.runs} == {(1, 16), (16, 64)}
    server = [s for s, _ in p.servers()][-1]
    assert (Path(server.target) / "tokenizer.json").is_file() and (Path(server.draft) / "config.json").is_file()
    with pytest.raises(plan.PlanError, match="per_concurrency"):
        plan.loads(text.replace("{ per_concurrency = 4, min = 16 }", "{ min = 16 }"))
    with pytest.raises(plan.PlanError, match="unknown shape|no shape|shape"):
        plan.loads(text.replace('"shape:qwen3-8b"', '"shape:nope"'))


# --- a what-if plan from a measured run ---------------------------------------------------------
def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True, timeout=60)


def test_a_measured_run_s_own_curve_becomes_a_what_if_plan(recorded_db, tmp_path, demo_models):
    """On the H200 database: run ids and stored paths of another host."""
    db = store.open_db(recorded_db, readonly=True)
    rows = store.runs(db)
    store.close(db)
    run = next(r for r in rows if r.status == "completed" and r.method == "draft_model")
    base = next(r for r in rows if r.method == "baseline")
    ngram = next(r for r in rows if r.method == "ngram")
    out = tmp_path / "what-if.toml"
    done = _cli("what-if", "--from-run", str(run.id), "--db", str(recorded_db), "--out", str(out),
                "--concurrency", "1", "16")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert 'mode = "what-if"' in text and f"measured: run {run.id}" in text
    # Refusals in one line, and nothing overwritten.
    again = _cli("what-if", "--from-run", str(run.id), "--db", str(recorded_db), "--out", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr and out.read_text() == text
    for bad, why in ((base.id, "measured no acceptance"), (99999, "no run 99999"),
                     (ngram.id, "not a what-if method")):
        done = _cli("what-if", "--from-run", str(bad), "--db", str(recorded_db), "--out", str(tmp_path / "x.toml"))
        assert done.returncode == 2 and why in done.stderr and len(done.stderr.strip().splitlines()) == 1
    # The plan, with that host's model folders swapped for this machine's demo models.
    text = (text.replace(f'"{run.target}"', '"demo:smollm2-135m"')
            .replace(f'"{run.draft}"', '"demo:smollm2-135m-draft-noisy-copy"'))
    server = [s for s, _ in plan.loads(text).servers()][-1]
    assert server.what_if and server.method == run.method and server.n == run.n
    assert server.imposed == pytest.approx(run.per_position, abs=1e-4)
    assert {r.concurrency for r in plan.loads(text).runs} == {1, 16}


def test_a_what_if_plan_from_a_demo_run_resolves_its_demo_models(demo_models, monkeypatch):
    from workbench.usecases import whatif

    row = {"id": 1, "experiment_id": 0, "method": "draft_model", "n": 3, "status": "completed", "what_if": 0,
           "per_position": json.dumps([0.734, 0.548, 0.449]), "workload": "builtin", "concurrency": 4,
           "target": str(demo_models["smollm2-135m"]), "draft": str(demo_models["smollm2-135m-draft-noisy-copy"]),
           "options": "{}", "num_prompts": 16, "max_tokens": 128, "warmup": 2, "temperature": 0.0, "top_p": 1.0,
           "ignore_eos": 0, "profile": json.dumps({"kind": "local"})}
    monkeypatch.setattr(whatif.store, "run", lambda _db, run_id: store.run_record(row) if run_id == 1 else None)
    text = whatif.plan_from_run(None, 1)
    assert 'model = "demo:smollm2-135m"' in text and 'draft = "demo:smollm2-135m-draft-noisy-copy"' in text
    server = [s for s, _ in plan.loads(text).servers()][-1]
    assert server.imposed == (0.734, 0.548, 0.449) and server.imposed_source.startswith("measured: run 1 ")
    # With the measured run's plan stored, the what-if server is launched as that one was.
    measured_plan = (
        'name = "pair"\n[target]\nmodel = "/elsewhere/target"\nmax_model_len = 1024\nenforce_eager = true\n'
        'extra_args = ["--gpu-memory-utilization", "0.3"]\n[server]\nhealth_timeout_s = 400\n'
        '[[methods]]\nmethod = "draft_model"\ndraft = "/elsewhere/draft"\nn = 3\n')
    row["experiment_id"] = 7
    monkeypatch.setattr(whatif.store, "experiment_plan", lambda _db, eid: measured_plan if eid == 7 else None)
    text = whatif.plan_from_run(None, 1)
    served = plan.loads(text)
    server = [s for s, _ in served.servers()][-1]
    assert 'model = "demo:smollm2-135m"' in text and server.enforce_eager and server.max_model_len == 1024
    assert "--gpu-memory-utilization" in server.extra_args and server.what_if
    assert {r.server.method for r in served.runs} == {"baseline", "draft_model"}
    alone = plan.loads(whatif.plan_from_run(None, 1, baseline=False))
    assert {r.server.method for r in alone.runs} == {"draft_model"}


def test_the_catalog_lists_the_published_curves_with_their_source():
    done = _cli("catalog", "--curves")
    assert done.returncode == 0, done.stderr
    assert "reference-study/gemma-4-26b-a4b-it/mtp/gsm8k" in done.stdout
    assert "source: reference study" in done.stdout and "MI300X" in done.stdout
