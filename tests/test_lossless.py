"""The lossless check: answers graded against the task's reference, a speculative run's answers
compared with its baseline's, and a server whose speculation is not lossless (the vLLM stand-in,
replaying recorded real answers, garbling those of its speculative server) flagged on Compare,
in the report and in `draftbench show`; the same sweep with a healthy stand-in flags nothing."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from app.exports import write_report
from app.pages.compare_page import ComparePage
from helpers.recorded import stored_runs
from workbench import launch, plan, store
from workbench.analysis import answer, compare, lossless
from workbench.cli import entry
from workbench.load import grade, workloads
from workbench.sweep import runner
from workbench.usecases import compare_view

from helpers.standin_sweep import SCRIPT  # noqa: E402
PLAN = """
name = "lossless"
[target]
model = "demo:smollm2-135m"
served_name = "smollm2"
enforce_eager = true
[[methods]]
method = "ngram"
n = 2
[workload]
names = ["builtin:math_word"]
num_prompts = 6
max_tokens = 32
warmup = 0
concurrency = [1]
temperature = 0.0
"""


# --- grading -------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, right", [
    ("48 muffins cost $144 and the cookies $144, so the total is $288.", True),
    ("So the bakery made 1,288 dollars.", False),
    ("Step 1: 48 x 3 = 144\nStep 2: 96 x 1.5 = 144\n#### 288", True),
    ("#### 288.0 (from 144 + 144)", True),
    ("The answer is 288 dollars, not 290.", False),   # the last number counts
    ("I cannot tell.", False),
])
def test_the_final_number_of_a_word_problem(answer, right):
    assert grade.correct("math_word", "288", answer) is right


@pytest.mark.parametrize("answer, reference, right", [
    ("so the probability is \\boxed{\\frac{3}{4}}.", "\\frac{3}{4}", True),
    ("\\boxed{\\dfrac{3}{4}}", "\\frac{3}{4}", True),
    ("\\boxed{0.75}", "\\frac{3}{4}", True),
    ("\\boxed{3/4}", "\\frac{3}{4}", True),
    ("first \\boxed{2}, then corrected: \\boxed{x = 1}", "1", True),
    ("\\boxed{25 \\pi}", "25\\pi", True),
    ("\\boxed{\\frac{3}{10}}", "\\frac{3}{4}", False),
    ("the answer is 1", "1", False),                   # not boxed
    ("\\boxed{1", "1", False),                          # unbalanced
])
def test_the_last_boxed_answer(answer, reference, right):
    assert grade.correct("competition_math", reference, answer) is right


def test_code_tasks_and_prompts_without_a_reference_are_not_graded():
    assert grade.correct("function_completion", "x", "x") is None
    assert grade.correct("math_word", None, "288") is None


def test_the_builtin_math_prompts_carry_their_answers():
    by_id = {p.id: p for p in workloads.load("builtin")}
    assert by_id["math-word-01"].reference == "288" and by_id["competition-math-07"].reference == "53"
    graded = [p for p in by_id.values() if p.reference is not None]
    assert {p.family for p in graded} == {"math_word", "competition_math"} and len(graded) == 24


# --- comparing answers ---------------------------------------------------------------------------
def _answers(*items):
    return {(i, f"p{i}"): item for i, item in enumerate(items)}


def test_identical_answers_common_prefixes_and_flips_by_hand():
    base = _answers(("abcd", True), ("abcd", True), ("abcd", False), ("ab", None))
    spec = _answers(("abcd", True), ("abXX", False), ("abcd", True), ("zz", None))
    check = lossless.compare(7, base, spec)
    # prefix shares 1, 0.5, 1, 0 -> median 0.75; one answer turned wrong, one right
    assert (check.baseline, check.compared, check.identical) == (7, 4, 2)
    assert check.prefix_share == 0.75 and (check.turned_wrong, check.turned_right) == (1, 1)
    assert lossless.accuracy(spec) == (2 / 3, 3)


def test_the_sign_test_on_answers_that_turned_wrong():
    assert lossless.sign_test_p(5, 0) == 1 / 32
    assert lossless.sign_test_p(3, 1) == 5 / 16
    assert lossless.sign_test_p(0, 0) == 1.0


def _row(i, method, **kw):
    return store.run_record({"id": i, "method": method, "status": "completed", "temperature": 0.0, "what_if": 0,
                             "repeat": 1, "experiment_id": 1, "target": "t", "workload": "w", "concurrency": 1,
                             "request_rate": None, "num_prompts": 4, "max_tokens": 8, "top_p": 1.0, "ignore_eos": 0,
                             **kw})


def test_each_speculative_run_is_checked_against_the_baseline_of_its_own_repeat():
    rows = [_row(1, "baseline"), _row(2, "baseline", repeat=2), _row(3, "ngram", repeat=2),
            _row(4, "ngram", temperature=0.7), _row(5, "eagle3", what_if=1), _row(6, "ngram", concurrency=4)]
    answers = {i: _answers(("same", True), (f"run {i}", None)) for i in range(1, 7)}
    figures = lossless.figures_for(rows, answers.get)
    assert set(figures) == {1, 2, 3, 6}  # sampling at 0.7 and a what-if run are not checked
    assert figures[3]["lossless_baseline"] == 2 and figures[3]["lossless_identical"] == 1
    assert "lossless_baseline" not in figures[6]  # no baseline at its concurrency: accuracy only
    assert figures[1] == {"accuracy": 1.0, "graded": 1}


def test_the_verdict_names_the_share_and_the_accuracy_drop():
    row = _row(3, "ngram", lossless_baseline=1, lossless_compared=10, lossless_identical=2, lossless_prefix=0.1,
               lossless_turned_wrong=6, lossless_turned_right=0)
    why = lossless.verdict(row)
    assert why.startswith("outputs differ from the baseline: this server's speculation is not lossless")
    assert "2/10 answers identical" in why and "6 answers right in the baseline are wrong here" in why
    assert lossless.verdict(replace(row, lossless_identical=9, lossless_turned_wrong=1, lossless_prefix=0.9)) is None
    # Few identical answers that part late (bf16 rounding) are healthy; parting early is not.
    healthy = replace(row, lossless_identical=2, lossless_prefix=0.76, lossless_turned_wrong=0)
    assert lossless.verdict(healthy) is None
    assert "median common prefix 30%" in lossless.verdict(replace(healthy, lossless_prefix=0.3))
    assert "1/10 answers identical" not in (lossless.verdict(replace(healthy, lossless_identical=1)) or "")
    assert "0/10 answers identical" in lossless.verdict(replace(healthy, lossless_identical=0))
    assert lossless.verdict(_row(1, "baseline")) is None


# --- a sweep against the stand-in ----------------------------------------------------------------
def _sweep(db_path: Path, vllm_install, monkeypatch, lossy: bool) -> list[dict]:
    monkeypatch.setattr(launch.vllm_cli, "argv", lambda python, args: [sys.executable, str(SCRIPT), *args])
    monkeypatch.setenv("STANDIN_LOSSY", "1" if lossy else "0")
    r = runner.Runner(plan.loads(PLAN), str(db_path), vllm_install, emit=lambda e: None, scrape_interval_s=0.1)
    r.run()
    r.db.conn.close()
    return stored_runs(db_path)


@pytest.fixture(scope="module")
def sweeps(demo_models, vllm_install, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lossless")
    with pytest.MonkeyPatch.context() as mp:
        healthy = _sweep(folder / "healthy.sqlite", vllm_install, mp, lossy=False)
        broken = _sweep(folder / "broken.sqlite", vllm_install, mp, lossy=True)
    return folder, healthy, broken


def test_a_healthy_server_answers_as_its_baseline(sweeps):
    _, healthy, _ = sweeps
    spec = next(r for r in healthy if r.method == "ngram")
    base = next(r for r in healthy if r.method == "baseline")
    assert spec.lossless_baseline == base.id and spec.lossless_compared == 6
    assert spec.lossless_identical == 6 and spec.lossless_prefix == 1.0
    assert spec.graded == base.graded == 6 and spec.accuracy == base.accuracy
    assert lossless.verdict(spec) is None
    assert answer.lossless_notes(compare.configs(healthy)) == []


def test_a_server_whose_speculation_is_not_lossless_is_flagged(sweeps, qtbot, tmp_path, capsys):
    folder, _, broken = sweeps
    spec = next(r for r in broken if r.method == "ngram")
    assert spec.lossless_compared == 6 and spec.lossless_identical == 0
    assert spec.mal and spec.mal > 1  # the acceptance figures look as healthy as ever
    flag = "speculation is not lossless"
    # Compare and the report
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(broken, folder / "broken.sqlite")
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    assert flag in page.crossover.text() and f"run {spec.id} (ngram N=2, c=1)" in page.crossover.text()
    report = write_report(compare_view.build(broken, folder / "broken.sqlite"), tmp_path / "r.html",
                          "lossless").read_text()
    assert flag in report.split("<h3>Before trusting these figures</h3>")[1].split("</ul>")[0]
    # draftbench show: the experiment's table and notes, and the run's own summary
    assert entry.main(["show", "--db", str(folder / "broken.sqlite")]) == 0
    shown = capsys.readouterr().out
    assert "answers" in shown.splitlines()[0] and "! 0/6 identical" in shown and flag in shown
    assert entry.main(["show", str(spec.id), "--db", str(folder / "broken.sqlite")]) == 0
    summary = capsys.readouterr().out
    assert "0 of 6 identical to run" in summary and "LOSSLESS CHECK" in summary


def test_a_file_from_before_answers_were_stored_opens_and_checks_nothing(demo_db, tmp_path):
    rows = stored_runs(demo_db)
    assert all(r.lossless_compared is None for r in rows)
    assert answer.lossless_notes(compare.configs(rows)) == []
    db = store.open_db(demo_db, readonly=True)
    try:
        assert store.answers(db, rows[0].id) == []
    finally:
        store.close(db)
