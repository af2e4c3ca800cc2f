"""Benchmark loaders on files written here in each dataset's published schema (the Hub itself is
unreachable from these machines), and `draftbench workloads` showing the same prompts."""

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench import plan
from workbench.load import datasets, workloads


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("datasets")
    pq.write_table(pa.table({"question": ["Tom has 3 apples and buys 4 more. How many?", "A car goes 60 km/h for 2 h. Distance?"],
                             "answer": ["3 + 4 = 7\n#### 7", "60 * 2 = 120\n#### 120"]}), d / "gsm8k.parquet")
    (d / "math500.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
        {"problem": "Find $x$ if $2x + 3 = 11$.", "solution": "x = 4", "answer": "4", "subject": "Algebra",
         "level": 1, "unique_id": "test/algebra/1.json"}]))
    pq.write_table(pa.table({"task_id": ["HumanEval/0"], "prompt": ["def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n"],
                             "canonical_solution": ["    return a + b\n"], "test": ["assert add(1, 2) == 3"],
                             "entry_point": ["add"]}), d / "humaneval.parquet")
    pq.write_table(pa.table({"task_id": [11], "text": ["Write a function to reverse a string."],
                             "code": ["def rev(s): return s[::-1]"], "test_list": [["assert rev('ab') == 'ba'", "assert rev('') == ''"]],
                             "test_setup_code": [""], "challenge_test_list": [[]]}), d / "mbpp.parquet")
    return d


def test_each_benchmark_is_posed_in_its_usual_form(files):
    gsm = workloads.load(f"gsm8k:{files / 'gsm8k.parquet'}")
    assert [p.family for p in gsm] == ["math_word", "math_word"]
    assert gsm[0].text.startswith("Tom has 3 apples") and "####" in gsm[0].text
    math = workloads.load(f"math500:{files / 'math500.jsonl'}")
    assert math[0].id == "math500-test/algebra/1.json" and "\\boxed{}" in math[0].text
    he = workloads.load(f"humaneval:{files / 'humaneval.parquet'}")
    assert he[0].id == "humaneval-HumanEval/0" and "```python\ndef add(a, b):" in he[0].text
    mbpp = workloads.load(f"mbpp:{files / 'mbpp.parquet'}")
    assert mbpp[0].family == "programming_task"
    assert "assert rev('ab') == 'ba'\nassert rev('') == ''" in mbpp[0].text


def test_a_file_without_the_published_columns_is_refused(files, tmp_path):
    pq.write_table(pa.table({"prompt": ["x"]}), tmp_path / "wrong.parquet")
    with pytest.raises(workloads.WorkloadError, match="gsm8k: row 1 lacks the published column 'question'"):
        workloads.load(f"gsm8k:{tmp_path / 'wrong.parquet'}")
    with pytest.raises(workloads.WorkloadError, match="is not a file"):
        workloads.load("mbpp:/no/such/file.parquet")


def test_cli_shows_the_same_prompts(files):
    for spec in (f"mbpp:{files / 'mbpp.parquet'}", "builtin:competition_math"):
        done = subprocess.run([sys.executable, "-m", "app", "workloads", "show", spec, "--json", "--limit", "0"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        assert [(p["id"], p["prompt"]) for p in shown] == [(p.id, p.text) for p in workloads.load(spec)]
    listing = subprocess.run([sys.executable, "-m", "app", "workloads", "list"], capture_output=True, text=True)
    for name in ("gsm8k", "math500", "humaneval", "mbpp", "builtin:programming_task"):
        assert name in listing.stdout


def test_offline_without_a_cached_copy_says_so(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-m", "app", "workloads", "show", "gsm8k"], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "openai/gsm8k is not in the Hugging Face cache" in done.stderr and "gsm8k:PATH" in done.stderr


def test_plans_accept_benchmarks_without_fetching_them(files, tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text("{}")
    text = f'[target]\nmodel = "{tmp_path / "t"}"\n[workload]\nnames = ["gsm8k", "mbpp:{files / "mbpp.parquet"}"]\ntemperature = 0.0\n'
    p = plan.loads(text)
    assert {r.workload for r in p.runs} == {"gsm8k", f"mbpp:{files / 'mbpp.parquet'}"}
    with pytest.raises(plan.PlanError, match="unknown dataset 'gsm9k'|neither"):
        plan.loads(text.replace('"gsm8k"', '"gsm9k:x.parquet"'))
    assert set(datasets.DATASETS) == {"gsm8k", "math500", "humaneval", "mbpp"}
