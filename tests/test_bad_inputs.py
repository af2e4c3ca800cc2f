"""Every bad input listed in docs/reliability.md, driven through the real command line or the real
desktop form: each is answered by one line that says what is wrong, never a traceback, and
nothing stored is damaged.

The table in docs/reliability.md is the list: its ids must match the drivers here one for one,
and its message column is what the test expects to read.
"""

from __future__ import annotations

import html
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import store
from workbench.checkpoints import demo

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"
ROW = re.compile(r"^\|\s*`([a-z0-9-]+)`\s*\|\s*(CLI|plan|GUI)\s*\|(.*)\|\s*`(.+)`\s*\|\s*$")


def doc_rows() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"duplicate id {m.group(1)} in {DOC.name}"
            rows[m.group(1)] = (m.group(2), m.group(4).replace("\\|", "|"))
    return rows


# --- plan files ------------------------------------------------------------------------------------
TARGET = '[target]\nmodel = "demo:smollm2-135m"\n'
WORKLOAD = '[workload]\ntemperature = 0.0\nnum_prompts = 4\nmax_tokens = 32\n'


def plan(target=TARGET, methods="", workload=WORKLOAD, extra=""):
    return extra + target + methods + workload


def ngram(line):
    return f'[[methods]]\nmethod = "ngram"\nn = 2\n{line}\n'


def model_folder(tmp: Path, name: str, vocab: int) -> Path:
    folder = tmp / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": vocab}))
    return folder


PLANS = {
    "plan-toml-syntax": lambda t: "[target\nmodel = 1\n",
    "plan-unknown-key": lambda t: plan(extra='speed = "fast"\n'),
    "plan-no-target": lambda t: WORKLOAD,
    "target-missing-path": lambda t: plan(target='[target]\nmodel = "/no/such/model"\n'),
    "target-no-config": lambda t: (t.joinpath("empty").mkdir(), plan(target='[target]\nmodel = "empty"\n'))[1],
    "target-bad-repo-id": lambda t: plan(target='[target]\nmodel = "Qwen3 8B"\n'),
    "target-unknown-demo": lambda t: plan(target='[target]\nmodel = "demo:gpt-5"\n'),
    "target-max-model-len-text": lambda t: plan(target=TARGET + 'max_model_len = "long"\n'),
    "target-extra-args-port": lambda t: plan(target=TARGET + 'extra_args = ["--port", "9000"]\n'),
    "methods-not-tables": lambda t: plan(extra='methods = ["ngram"]\n'),
    "method-unknown": lambda t: plan(methods='[[methods]]\nmethod = "warp"\nn = 2\n'),
    "method-unknown-key": lambda t: plan(methods=ngram('tokens = 3')),
    "method-no-n": lambda t: plan(methods='[[methods]]\nmethod = "ngram"\n'),
    "n-zero": lambda t: plan(methods='[[methods]]\nmethod = "ngram"\nn = 0\n'),
    "n-text": lambda t: plan(methods='[[methods]]\nmethod = "ngram"\nn = ["three"]\n'),
    "n-fraction": lambda t: plan(methods='[[methods]]\nmethod = "ngram"\nn = 2.5\n'),
    "n-over-block-limit": lambda t: plan(methods='[[methods]]\nmethod = "dflash"\ndraft = "z-lab/Qwen3-8B-DFlash-b16"\nn = 16\n'),
    "draft-missing": lambda t: plan(methods='[[methods]]\nmethod = "draft_model"\nn = 2\n'),
    "draft-not-taken": lambda t: plan(methods=ngram('draft = "demo:smollm2-135m-draft-noisy-copy"')),
    "draft-missing-path": lambda t: plan(methods='[[methods]]\nmethod = "draft_model"\ndraft = "/no/such/draft"\nn = 2\n'),
    "draft-vocab-mismatch": lambda t: (model_folder(t, "tiny-draft", 1000),
                                       plan(methods='[[methods]]\nmethod = "draft_model"\ndraft = "tiny-draft"\nn = 2\n'))[1],
    "option-unknown": lambda t: plan(methods=ngram("options = { lookahead = 3 }")),
    "option-lookup-order": lambda t: plan(methods=ngram("options = { prompt_lookup_min = 5, prompt_lookup_max = 2 }")),
    "concurrency-zero": lambda t: plan(workload=WORKLOAD + "concurrency = [0, 4]\n"),
    "concurrency-text": lambda t: plan(workload=WORKLOAD + 'concurrency = "four"\n'),
    "temperature-missing": lambda t: plan(workload="[workload]\nnum_prompts = 4\n"),
    "temperature-negative": lambda t: plan(workload="[workload]\ntemperature = -0.5\n"),
    "temperature-too-high": lambda t: plan(workload="[workload]\ntemperature = 7.0\n"),
    "temperature-text": lambda t: plan(workload='[workload]\ntemperature = "greedy"\n'),
    "top-p-zero": lambda t: plan(workload=WORKLOAD + "top_p = 0.0\n"),
    "max-tokens-too-long": lambda t: plan(workload="[workload]\ntemperature = 0.0\nmax_tokens = 4096\n"),
    "num-prompts-zero": lambda t: plan(workload="[workload]\ntemperature = 0.0\nnum_prompts = 0\n"),
    "repeats-zero": lambda t: plan(workload=WORKLOAD + "repeats = 0\n"),
    "ignore-eos-text": lambda t: plan(workload=WORKLOAD + 'ignore_eos = "yes"\n'),
    "workload-unknown": lambda t: plan(workload=WORKLOAD + 'names = ["sharegpt"]\n'),
    "workload-family-unknown": lambda t: plan(workload=WORKLOAD + 'names = ["builtin:poetry"]\n'),
    "workload-bad-json": lambda t: (t.joinpath("p.jsonl").write_text('{"prompt": "hi"}\n{oops\n'),
                                    plan(workload=WORKLOAD + 'names = ["p.jsonl"]\n'))[1],
    "workload-no-prompt-column": lambda t: (t.joinpath("p.jsonl").write_text('{"query": "hi"}\n'),
                                            plan(workload=WORKLOAD + 'names = ["p.jsonl"]\n'))[1],
    "workload-csv": lambda t: (t.joinpath("p.csv").write_text("prompt\nhi\n"),
                               plan(workload=WORKLOAD + 'names = ["p.csv"]\n'))[1],
    "workload-empty-prompt": lambda t: (t.joinpath("p.jsonl").write_text('{"prompt": "  "}\n'),
                                        plan(workload=WORKLOAD + 'names = ["p.jsonl"]\n'))[1],
    "server-env-not-table": lambda t: plan(extra='', workload=WORKLOAD + '[server]\nenv = "HF_HOME=/x"\n'),
    "health-timeout-zero": lambda t: plan(workload=WORKLOAD + "[server]\nhealth_timeout_s = 0\n"),
}


# --- results databases -----------------------------------------------------------------------------
def draftbench_db(path: Path, runs: int = 40) -> Path:
    db = store.open_db(path)
    exp = store.experiment_for(db, "e", "h", "", "", {})
    with db.conn:
        for i in range(runs):
            db["runs"].insert({"experiment_id": exp, "key": f"k{i}", "seq": i, "method": "baseline",
                               "workload": "builtin", "concurrency": 1, "status": "completed",
                               "command": "vllm serve x " + "y" * 400})
    db.conn.close()
    return path


def speculative_db(path: Path) -> Path:
    """draftbench_db's one baseline run, and run 2 an ngram N=2 run: not a baseline to pin."""
    draftbench_db(path, 1)
    db = store.open_db(path)
    with db.conn:
        db["runs"].insert({"experiment_id": 1, "key": "ngram", "seq": 1, "method": "ngram", "n": 2,
                           "workload": "builtin", "concurrency": 1, "status": "completed", "output_tok_s": 10.0})
    db.conn.close()
    return path


def empty_db(path: Path) -> Path:
    store.open_db(path).conn.close()
    return path


def damaged_db(t: Path) -> Path:
    path = draftbench_db(t / "damaged.sqlite")
    data = bytearray(path.read_bytes())
    page = 4096
    # The last pages (the runs table's) overwritten; the header, schema and meta table stay readable,
    # so the damage shows only when the runs are read.
    for offset in range(len(data) - 2 * page, len(data), page):
        data[offset:offset + page] = b"\xde\xad" * (page // 2)
    path.write_bytes(bytes(data))
    return path


def newer_db(t: Path) -> Path:
    path = draftbench_db(t / "newer.sqlite")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    return path


def other_sqlite(t: Path) -> Path:
    path = t / "other.sqlite"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.close()
    return path


def garbage(t: Path) -> Path:
    path = t / "garbage.sqlite"
    path.write_bytes(b"not sqlite at all " * 300)
    return path


def bench_json(t: Path, **fields) -> Path:
    data = {"duration": 10.0, "completed": 4, "total_output_tokens": 400, "output_throughput": 40.0}
    data.update(fields)
    path = t / "bench.json"
    path.write_text(json.dumps(data))
    return path


# id -> (argv builder, extra environment or None for in-process)
OFFLINE = {"HF_HUB_OFFLINE": "1"}
CLI = {
    "plan-missing": (lambda t: ["run", str(t / "missing.toml")], None),
    "plan-folder": (lambda t: ["run", str(t)], None),
    "plan-not-text": (lambda t: (t.joinpath("p.toml").write_bytes(b"\xff\xfe\x00binary"), ["run", str(t / "p.toml")])[1], None),
    "db-folder": (lambda t: ["runs", "--db", str(t)], None),
    "db-missing": (lambda t: ["runs", "--db", str(t / "none.sqlite")], None),
    "db-garbage": (lambda t: ["runs", "--db", str(garbage(t))], None),
    "db-not-draftbench": (lambda t: ["runs", "--db", str(other_sqlite(t))], None),
    "db-newer-schema": (lambda t: ["runs", "--db", str(newer_db(t))], None),
    "db-damaged": (lambda t: ["runs", "--db", str(damaged_db(t))], None),
    "run-into-damaged-db": (lambda t: ["run", str(ROOT / "resources" / "plans" / "demo.toml"), "--db", str(damaged_db(t))], None),
    "run-into-newer-db": (lambda t: ["run", str(ROOT / "resources" / "plans" / "demo.toml"), "--db", str(newer_db(t))], None),
    "show-unknown-run": (lambda t: ["show", "7", "--db", str(draftbench_db(t / "r.sqlite", 1))], None),
    "show-run-not-number": (lambda t: ["show", "seven"], None),
    "show-empty-db": (lambda t: ["show", "--db", str(empty_db(t / "e.sqlite"))], None),
    "show-baseline-unknown": (lambda t: ["show", "--db", str(draftbench_db(t / "r.sqlite", 1)), "--baseline", "99"], None),
    "show-baseline-speculative": (lambda t: ["show", "--db", str(speculative_db(t / "r.sqlite")), "--baseline", "2"], None),
    "command-unknown": (lambda t: ["benchmark"], None),
    "import-missing": (lambda t: ["import-bench", str(t / "none.json"), "--db", str(t / "r.sqlite")], None),
    "import-not-json": (lambda t: (t.joinpath("b.json").write_text("{not json"), ["import-bench", str(t / "b.json"), "--db", str(t / "r.sqlite")])[1], None),
    "import-not-bench": (lambda t: (t.joinpath("b.json").write_text('{"model": "x"}'), ["import-bench", str(t / "b.json"), "--db", str(t / "r.sqlite")])[1], None),
    "import-needs-n": (lambda t: ["import-bench", str(bench_json(t)), "--method", "eagle3", "--db", str(t / "r.sqlite")], None),
    "import-unknown-method": (lambda t: ["import-bench", str(bench_json(t)), "--method", "medusa", "--n", "2", "--db", str(t / "r.sqlite")], None),
    "import-spec-as-baseline": (lambda t: ["import-bench", str(bench_json(t, spec_decode_num_drafts=90)), "--db", str(t / "r.sqlite")], None),
    "export-bench-unwritable": (lambda t: ["export-bench", "1", "--db", str(draftbench_db(t / "r.sqlite", 1)), "--out", str(t / "no" / "dir" / "r.json")], None),
    "export-format": (lambda t: ["export", "--db", str(draftbench_db(t / "r.sqlite", 1)), "--format", "gif"], None),
    "export-chart": (lambda t: ["export", "--db", str(draftbench_db(t / "r.sqlite", 1)), "--chart", "pie"], None),
    "export-runs-text": (lambda t: ["export", "--runs", "3,x"], None),
    "export-size": (lambda t: ["export", "--db", str(draftbench_db(t / "r.sqlite", 1)), "--width", "5"], None),
    "export-unknown-run": (lambda t: ["report", "--db", str(draftbench_db(t / "r.sqlite", 1)), "--runs", "99"], None),
    "workloads-unknown": (lambda t: ["workloads", "show", "sharegpt"], None),
    "workloads-limit-text": (lambda t: ["workloads", "show", "builtin", "--limit", "all"], None),
    "hub-offline-workload": (lambda t: ["workloads", "show", "gsm8k"], OFFLINE),
    "hub-offline-run": (lambda t: (t.joinpath("p.toml").write_text(plan(workload=WORKLOAD + 'names = ["mbpp"]\n')),
                                   ["run", str(t / "p.toml"), "--db", str(t / "r.sqlite")])[1], OFFLINE),
    "log-unwritable": (lambda t: ["run", str(t / "p.toml"), "--log", str(t / "no" / "dir" / "log.txt")], None),
    "events-unwritable": (lambda t: ["run", str(ROOT / "resources" / "plans" / "demo.toml"), "--db", str(t / "r.sqlite"),
                                     "--events", str(t / "no" / "dir" / "e.jsonl")], None),
    "vllm-python-missing": (lambda t: ["run", str(ROOT / "resources" / "plans" / "demo.toml"), "--db", str(t / "r.sqlite"),
                                       "--vllm-python", str(t / "no-python")], None),
}
for _id, _text in PLANS.items():
    CLI[_id] = (lambda t, text=_text: (t.joinpath("plan.toml").write_text(text(t)),
                                       ["run", str(t / "plan.toml"), "--db", str(t / "r.sqlite")])[1], None)


def run_cli(argv: list[str], env: dict | None, cwd: Path, capfd) -> tuple[int, str, str]:
    if env is not None:
        # Settings read when huggingface_hub is imported need a fresh process; its cache is empty.
        full = {**os.environ, "HF_HOME": str(cwd / "hf-home"), "PYTHONPATH": str(ROOT), **env}
        done = subprocess.run([sys.executable, "-m", "app", *argv], capture_output=True, text=True, cwd=cwd,
                              env=full, timeout=120)
        return done.returncode, done.stdout, done.stderr
    from app.entry import main

    old = Path.cwd()
    os.chdir(cwd)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    finally:
        os.chdir(old)
    out, err = capfd.readouterr()
    return code, out, err


def test_the_table_and_the_drivers_agree():
    rows = doc_rows()
    drivers = set(CLI) | set(GUI)
    assert set(rows) == drivers, (sorted(set(rows) - drivers), sorted(drivers - set(rows)))
    assert len(rows) >= 30
    for key, (where, _) in rows.items():
        assert (where == "GUI") == (key in GUI), key
        assert (where == "plan") == (key in PLANS), key


@pytest.mark.parametrize("case", sorted(CLI))
def test_cli_answers_in_one_line(case, tmp_path, capfd):
    _, message = doc_rows()[case]
    build, env = CLI[case]
    argv = build(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.sqlite")}
    code, out, err = run_cli(argv, env, tmp_path, capfd)
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("draftbench"), lines[0]
    assert message in lines[0], lines[0]
    assert out == ""
    # Nothing stored was touched, and a refused plan started no database.
    assert {p: p.read_bytes() for p in before} == before
    if case in PLANS:
        assert not (tmp_path / "r.sqlite").exists()


# --- the desktop form ------------------------------------------------------------------------------
def _form_status(page) -> str:
    page.validate()
    # What the label shows: its rich text without tags, entities decoded.
    text = html.unescape(re.sub(r"<[^>]+>", "", page.status.text()))
    assert not page.run_button.isEnabled()
    return text


def _row(page, method="ngram", draft="", n="2", options=""):
    page.set_document({**page.document(), "methods": [{"method": method, "n": [2]}]})
    row = page.rows[0]
    row.draft.setText(draft)
    row.n.setText(n)
    row.options.setText(options)
    return _form_status(page)


def _workloads_unchecked(page):
    from PySide6.QtCore import Qt

    for i in range(page.workloads.count()):
        page.workloads.item(i).setCheckState(Qt.Unchecked)
    return _form_status(page)


def _window_warning(qtbot, tmp_path, vllm, monkeypatch, action) -> str:
    from app.main import MainWindow

    w = MainWindow(tmp_path / "ok.sqlite", vllm)
    qtbot.addWidget(w)
    said = []
    monkeypatch.setattr("app.main.QMessageBox.warning", lambda *a: said.append(a[2]))
    before = w.experiment.document()
    action(w)
    qtbot.waitUntil(lambda: w.opening is None, timeout=20000)  # a database is checked off the GUI thread
    assert len(said) == 1
    # The form and the open database are as they were.
    assert w.experiment.document() == before and w.db_path == tmp_path / "ok.sqlite"
    return said[0]


def _open_plan(text: str | bytes):
    def action(w):
        path = Path(w.db_path).parent / "chosen.toml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        import app.main

        app.main.QFileDialog.getOpenFileName = staticmethod(lambda *a, **k: (str(path), ""))
        w.open_plan()
    return action


def _open_db(make):
    return lambda w: w.set_database(make(Path(w.db_path).parent))


FORM = {
    "gui-n-zero": lambda p, t: _row(p, n="0, 2"),
    "gui-n-words": lambda p, t: _row(p, n="two"),
    "gui-n-empty": lambda p, t: _row(p, n=" "),
    "gui-options-syntax": lambda p, t: _row(p, options="prompt_lookup_max"),
    "gui-option-unknown": lambda p, t: _row(p, options="lookahead=3"),
    "gui-lookup-order": lambda p, t: _row(p, options="prompt_lookup_min=5, prompt_lookup_max=2"),
    "gui-draft-missing": lambda p, t: _row(p, method="draft_model"),
    "gui-draft-vocab": lambda p, t: _row(p, method="draft_model", draft=str(model_folder(t, "tiny", 1000))),
    "gui-dflash-n": lambda p, t: _row(p, method="dflash", draft="z-lab/Qwen3-8B-DFlash-b16", n="16"),
    "gui-target-missing": lambda p, t: (p.target.setText("/no/such/model"), _form_status(p))[1],
    "gui-target-empty": lambda p, t: (p.target.setText(""), _form_status(p))[1],
    "gui-concurrency-zero": lambda p, t: (p.concurrency.setText("0"), _form_status(p))[1],
    "gui-concurrency-words": lambda p, t: (p.concurrency.setText("1, many"), _form_status(p))[1],
    "gui-no-workload": lambda p, t: _workloads_unchecked(p),
    "gui-max-tokens": lambda p, t: (p.max_model_len.setValue(512), p.max_tokens.setValue(512), _form_status(p))[2],
}
WINDOW = {
    "gui-open-plan-toml": _open_plan("[target\nmodel = 1"),
    "gui-open-plan-types": _open_plan('[target]\nmodel = "demo:smollm2-135m"\nmax_model_len = "long"\n'),
    "gui-open-plan-concurrency": _open_plan('[target]\nmodel = "demo:smollm2-135m"\n[workload]\nconcurrency = "eight"\n'),
    "gui-open-plan-binary": _open_plan(b"\xff\xfe\x00\x01"),
    "gui-open-db-garbage": _open_db(garbage),
    "gui-open-db-newer": _open_db(newer_db),
    "gui-open-db-other": _open_db(other_sqlite),
    "gui-open-db-damaged": _open_db(damaged_db),
    "gui-open-db-folder": _open_db(lambda t: (t / "a-folder").mkdir() or t / "a-folder"),
}
GUI = {**FORM, **WINDOW}


@pytest.mark.parametrize("case", sorted(GUI))
def test_gui_answers_in_one_line(case, qtbot, tmp_path, vllm_install, monkeypatch):
    _, message = doc_rows()[case]
    if case in FORM:
        from app.pages.experiment import ExperimentPage
        from app.main import DEMO_PLAN, _read_plan_doc

        page = ExperimentPage(vllm_install, set())
        qtbot.addWidget(page)
        page.plan_path = tmp_path / "plan.toml"
        page.set_document(_read_plan_doc(DEMO_PLAN))
        assert page.run_button.isEnabled()
        text = FORM[case](page, tmp_path)
        assert text.startswith("Cannot run: ")
    else:
        text = _window_warning(qtbot, tmp_path, vllm_install, monkeypatch, WINDOW[case])
    assert "\n" not in text.strip() and "Traceback" not in text
    # Said in the plan's words, not Python's: no exception class, no conversion's own complaint.
    assert not re.search(r"\b\w+(Error|Exception)\b|invalid literal|int\(\)|float\(\)", text), text
    assert message in text, text


def test_demo_model_names_in_the_table_are_current():
    # The plan cases lean on the demo names; a rename would turn them into different errors.
    assert {m.name for m in demo.ALL} >= {"smollm2-135m", "smollm2-135m-draft-noisy-copy"}
