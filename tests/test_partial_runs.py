"""A run whose window ends with some requests failed is `partial`: stored with the count and the
first error, left out of speedups unless asked, and said so by `draftbench show`. The server is
the vLLM stand-in; two of the window's requests have their connection dropped, as a server whose
engine dies under them drops them."""

from __future__ import annotations

import subprocess
import sys

from helpers.standins.vllm_server import StandinVllm
from helpers.plans import attach_plan

from workbench import plan, store
from workbench.analysis import compare
from workbench.sweep import runner


def test_a_window_with_failed_requests_is_stored_partial(demo_models, vllm_install, tmp_path, monkeypatch):
    from workbench.checkpoints import demo

    window_calls = []

    def drop_2nd_and_5th(prompt: str, max_tokens: int) -> bool:
        """The 2nd and 5th of the window's requests get no answer. The window's requests ask for 32
        tokens of a built-in prompt; the warm-up asks for its own prompt and the prefix pass for one
        token, and those are answered."""
        if max_tokens == 32 and prompt != runner.WARMUP_PROMPT.text:
            window_calls.append(prompt)
            return len(window_calls) in (2, 5)
        return False

    with StandinVllm("draft_model_n3", api_key="standin-partial-key-0123456789ab") as server:
        server.drop = drop_2nd_and_5th
        monkeypatch.setenv("STANDIN_KEY", server.api_key)
        p = plan.loads(attach_plan(server.base_url, demo_models[demo.DRAFT_NOISY.name]))
        db_path = tmp_path / "partial.sqlite"
        summary = runner.Runner(p, str(db_path), vllm_install, emit=lambda e: None, scrape_interval_s=0.1).run()

    assert len(window_calls) == 6
    assert summary["completed"] == 0
    db = store.open_db(db_path, readonly=True)
    (row,) = store.runs(db)
    assert row.status == "partial"
    assert row.requests_ok == 4 and row.requests_failed == 2
    assert row.error.startswith("2 of 6 requests failed; the first: ")
    assert row.output_tok_s > 0 and row.client_cpu_s > 0 and row.client_processes == 1
    assert compare.configs([row]) == []
    assert [c.rows[0].id for c in compare.configs([row], include_partial=True)] == [row.id]

    def show(*extra: str) -> str:
        done = subprocess.run([sys.executable, "-m", "workbench.cli", "show", "--db", str(db_path), *extra],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "1 partial run(s) left out of (--include-partial counts them) the speedups" in show()
    assert "1 partial run(s) counted in the speedups" in show("--include-partial")
    one = show(str(row.id))
    assert "partial: 2 of 6 requests failed" in one and "load generator CPU" in one
