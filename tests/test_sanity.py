"""Sanity warnings: each is triggered by a plan, said on the command line and in the app."""

import subprocess
import sys

from workbench import plan, store
from workbench.plan import sanity

BASE = """
name = "sanity"
[target]
model = "demo:smollm2-135m"
[[methods]]
method = "suffix"
n = 8
[workload]
names = ["{workload}"]
concurrency = [1, 4]
temperature = {temperature}
ignore_eos = {ignore_eos}
"""


def _plan_file(tmp_path, workload="builtin", temperature="0.0", ignore_eos="false"):
    path = tmp_path / "plan.toml"
    path.write_text(BASE.format(workload=workload, temperature=temperature, ignore_eos=ignore_eos))
    return path


def _db_with_a_run_at(tmp_path, temperature, max_tokens, target):
    db = store.open_db(tmp_path / "r.sqlite")
    exp = store.experiment_for(db, "old", "old", "", "", {})
    db["runs"].insert({"experiment_id": exp, "key": "k", "status": "completed", "target": target,
                       "temperature": temperature, "max_tokens": max_tokens})
    db.conn.commit()
    return tmp_path / "r.sqlite"


def test_each_warning_is_triggered(tmp_path):
    p = plan.load(_plan_file(tmp_path, "random", "0.7", "true"), available_modules={"arctic_inference"})
    db = store.open_db(_db_with_a_run_at(tmp_path, 0.0, 64, p.runs[0].server.target))
    warnings = sanity.for_plan(p, db)
    assert sanity.RANDOM in warnings and sanity.IGNORE_EOS in warnings and sanity.SUFFIX_REUSE in warnings
    assert any("temperature 0.0" in w for w in warnings) and any("max tokens 64" in w for w in warnings)
    per_run = sanity.for_runs(p, db)
    suffix_runs = [r for r in p.runs if r.server.method == "suffix"]
    assert sanity.SUFFIX_REUSE not in per_run[suffix_runs[0].key] and sanity.SUFFIX_REUSE in per_run[suffix_runs[1].key]
    clean = plan.load(_plan_file(tmp_path / "..", "builtin"), available_modules={"arctic_inference"})
    assert sanity.for_plan(clean) == [sanity.SUFFIX_REUSE]


def test_warnings_appear_on_the_command_line(tmp_path):
    path = _plan_file(tmp_path, "random", "0.7", "true")
    target = plan.load(path, available_modules={"arctic_inference"}).runs[0].server.target
    db = _db_with_a_run_at(tmp_path, 0.0, 64, target)
    done = subprocess.run([sys.executable, "-m", "app", "run", str(path), "--db", str(db), "--dry-run"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for text in (sanity.RANDOM, sanity.IGNORE_EOS, sanity.SUFFIX_REUSE, "temperature 0.0", "max tokens 64"):
        assert text in done.stderr
    assert done.stderr.count("draftbench: warning:") == 5


def test_warnings_appear_in_the_experiment_page(qtbot, tmp_path, vllm_install):
    from app.pages.experiment import ExperimentPage
    import tomllib

    path = _plan_file(tmp_path, "random", "0.7", "true")
    target = plan.load(path, available_modules={"arctic_inference"}).runs[0].server.target
    page = ExperimentPage(vllm_install, {"arctic_inference"})
    qtbot.addWidget(page)
    page.db_path = _db_with_a_run_at(tmp_path, 0.0, 64, target)
    page.set_document(tomllib.loads(path.read_text()))
    # The findings are checked off the GUI thread; the summary shows first.
    qtbot.waitUntil(lambda: "checking" not in page.status.text(), timeout=10000)
    status = page.status.text()
    for text in ("random words", "ignore_eos", "suffix decoding caches", "temperature 0.0", "max tokens 64"):
        assert text in status, status
