"""When nothing pays, the answer says why in the terms that decide it: tokens a step against its cost."""

import dataclasses

from workbench import store
from workbench.analysis import answer, compare
from workbench.report.html import serve_html


def _row(id_, method, n, tok_s, mal=None, repeat=1, draft=None):
    return store.run_record({
        "id": id_, "experiment_id": 1, "status": "completed", "target": "/m/smollm2-135m", "method": method,
        "n": n, "draft": draft, "workload": "builtin:function_completion", "concurrency": 4, "repeat": repeat,
        "output_tok_s": tok_s, "mal": mal, "acceptance_rate": None, "temperature": 0.0, "what_if": 0,
        "options": "{}", "max_tokens": 64})


def test_nothing_pays_says_what_a_step_costs():
    rows = [_row(1, "baseline", None, 82.0), _row(2, "baseline", None, 84.0, repeat=2),
            _row(3, "draft_model", 3, 61.0, 3.16), _row(4, "draft_model", 3, 60.0, 3.16, repeat=2)]
    table = answer.answer_rows(compare.configs(rows))
    assert not any(r.fastest for r in table)
    (line,) = answer.none_pays(table)
    assert "Nothing pays beyond noise for smollm2-135m on builtin:function_completion at c=4" in line
    # MAL 3.16 at 0.73x: each step costs 3.16 / 0.73 = 4.3 baseline steps.
    assert "accepts 3.16 tokens a step, but its step costs 4.3" in line
    table = [dataclasses.replace(r, command="vllm serve x") for r in table]
    assert "its step costs 4.3" in serve_html(table, answer.none_pays(table))


def test_a_method_that_pays_beyond_noise_needs_no_excuse():
    rows = [_row(1, "baseline", None, 82.0), _row(2, "baseline", None, 83.0, repeat=2),
            _row(3, "ngram", 3, 120.0, 2.8), _row(4, "ngram", 3, 121.0, 2.8, repeat=2)]
    table = answer.answer_rows(compare.configs(rows))
    assert table[0].fastest and answer.none_pays(table) == []


def test_the_compare_page_says_why_nothing_pays(qtbot):
    from app.pages.compare_page import ComparePage

    rows = [_row(1, "baseline", None, 82.0), _row(2, "baseline", None, 84.0, repeat=2),
            _row(3, "draft_model", 3, 61.0, 3.16, draft="/m/draft"),
            _row(4, "draft_model", 3, 60.0, 3.16, repeat=2, draft="/m/draft")]
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    assert page.crossover.isVisibleTo(page) and "its step costs 4.3" in page.crossover.text()
