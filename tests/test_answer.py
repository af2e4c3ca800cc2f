"""The answer Compare leads with, checked against the stored rows and hand calculations: each
method's best configuration per target x workload x concurrency, the crossover, and the command
"Copy serve command" puts on the clipboard."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest
from PySide6.QtGui import QGuiApplication

from app.models.answer_model import COLUMNS
from app.pages.compare_page import ComparePage
from workbench import store
from workbench.analysis import answer, compare
from workbench.usecases import commands


def _row(i, method, n, tok_s, concurrency):
    return store.run_record({
            "id": i, "experiment_id": 1, "status": "completed", "target": "/models/Qwen3-8B/", "method": method,
            "draft": None, "n": n, "workload": "w", "concurrency": concurrency, "request_rate": None,
            "max_tokens": 64, "temperature": 0.0, "top_p": 1.0, "num_prompts": 8, "output_tok_s": tok_s,
            "mal": None if n is None else 2.0, "acceptance_rate": None, "per_position": None})


def test_best_configuration_per_method_against_independent_sql(recorded_db):
    rows = store.runs(store.open_db(recorded_db, readonly=True))
    table = answer.answer_rows(compare.configs(rows))
    conn = sqlite3.connect(f"file:{recorded_db}?mode=ro", uri=True)
    best = conn.execute(
        "SELECT r.concurrency, r.method, r.n, r.output_tok_s / b.output_tok_s FROM runs r JOIN runs b "
        "ON b.method = 'baseline' AND b.concurrency = r.concurrency WHERE r.method != 'baseline' AND "
        "r.output_tok_s = (SELECT max(output_tok_s) FROM runs x WHERE x.method = r.method AND "
        "x.concurrency = r.concurrency) ORDER BY r.concurrency").fetchall()
    got = sorted((r.concurrency, r.method, r.n, r.speedup) for r in table)
    assert [g[:3] for g in got] == sorted(b[:3] for b in best)
    assert [g[3] for g in got] == pytest.approx([s for *_, s in sorted(best)])
    # Fastest first within each concurrency, and marked only where it beats the baseline.
    assert [(r.concurrency, r.config, r.fastest) for r in table] == [
        (1, "ngram N=2", True), (1, "draft_model N=1", False), (8, "ngram N=2", True), (8, "draft_model N=1", False)]
    assert all(r.verdict == "one run: no interval" and r.target_short == "smollm2-135m" for r in table)


def test_the_answer_tables_columns_are_fields_of_its_rows():
    """The answer's cells are read by their column's key: each names a field of answer.AnswerRow."""
    assert {key for key, *_ in COLUMNS} <= {f.name for f in dataclasses.fields(answer.AnswerRow)}


def test_crossover_where_speculation_stops_paying():
    rows = [_row(1, "baseline", None, 20.0, 1), _row(2, "baseline", None, 60.0, 4), _row(3, "baseline", None, 100.0, 16),
            _row(4, "ngram", 3, 30.0, 1), _row(5, "ngram", 3, 66.0, 4), _row(6, "ngram", 3, 80.0, 16),
            _row(7, "ngram", 5, 28.0, 1)]
    (c,) = answer.crossovers(compare.configs(rows))
    assert c.points == [(1, 3, pytest.approx(1.5)), (4, 3, pytest.approx(1.1)), (16, 3, pytest.approx(0.8))]
    assert c.pays_up_to == 4 and c.stops_at == 16
    # Interpolated against log2 concurrency: 2 + (1.1 - 1) / (1.1 - 0.8) * (4 - 2) = 2.667 -> c = 6.35.
    assert c.estimate == pytest.approx(2 ** (2 + 0.1 / 0.3 * 2))
    assert "stops at c=16" in c.text and "crossover ≈ c=6" in c.text
    assert answer.short_model("/models/Qwen3-8B/") == "Qwen3-8B" and answer.short_model("demo:smollm2-135m") == "smollm2-135m"


def test_copy_serve_command_copies_the_measured_command(qtbot, recorded_db):
    rows = store.runs(store.open_db(recorded_db, readonly=True))
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, recorded_db)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    chosen = page.chosen()
    assert chosen.config == "ngram N=2" and chosen.fastest
    page.copy_button.click()
    copied = QGuiApplication.clipboard().text()
    stored = next(r.command for r in rows if r.id == chosen.run)
    assert copied.startswith("vllm serve ") and "--port 8000" in copied
    assert copied == stored.replace(stored.split("--port ")[1].split()[0], "8000", 1)
    config = json.loads(copied.split("--speculative-config '")[1].split("'")[0])
    assert config == {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4, "prompt_lookup_min": 2}


def test_a_run_without_a_stored_command_gets_one_built():
    row = store.run_record({"id": 1, "experiment_id": 1, "status": "completed", "target": "/models/Qwen3-8B",
                            "method": "eagle3", "n": 3, "draft": "org/eagle3-head", "options": None, "command": None})
    assert commands.serve_command(row) == (
        "vllm serve /models/Qwen3-8B --port 8000 --speculative-config "
        "'{\"method\":\"eagle3\",\"num_speculative_tokens\":3,\"model\":\"org/eagle3-head\"}'")


def test_a_stored_run_without_its_draft_gets_a_note_not_an_error():
    """A draft_model run stored without its draft (and without a command) cannot be served again:
    its serve command says why, as a shell comment, instead of raising (which took the Compare page
    down with it)."""
    row = store.run_record({"id": 7, "experiment_id": 1, "status": "completed", "target": "demo",
                            "method": "draft_model", "n": 2, "draft": None, "options": None, "command": None})
    note = commands.serve_command(row)
    assert note.startswith("# no serve command for this run: ") and "needs a draft checkpoint" in note
    assert commands.serve_command(dataclasses.replace(row, draft="org/draft")).startswith("vllm serve demo --port 8000 ")


@pytest.mark.parametrize("ngram, draft, note", [
    ((30.0, 31.0, 29.0), (20.0, 21.0, 19.0), "fastest"),                              # apart from both
    ((30.0, 31.0, 29.0), (29.0, 30.5, 28.0), "fastest measured, within noise of draft_model N=1"),
    ((21.0, 19.0, 20.5), (12.0, 12.5, 11.5), "fastest measured, within noise of the baseline"),
    ((30.0,), (20.0,), "fastest measured: one run, no interval"),
])
def test_fastest_only_beyond_noise(ngram, draft, note):
    """The top row is called fastest (and drawn bold) only when its interval clears the baseline's
    and the runner-up's; otherwise it is the fastest measured, and the answer says within what."""
    rows = [_row(1, "baseline", None, 20.0, 1), _row(2, "baseline", None, 20.2, 1), _row(3, "baseline", None, 19.8, 1)]
    rows += [_row(10 + i, "ngram", 2, v, 1) for i, v in enumerate(ngram)]
    rows += [_row(20 + i, "draft_model", 1, v, 1) for i, v in enumerate(draft)]
    top = answer.answer_rows(compare.configs(rows))[0]
    assert top.config == "ngram N=2" and top.fastest
    assert top.fastest_note == note and top.fastest_sure == (note == "fastest")
