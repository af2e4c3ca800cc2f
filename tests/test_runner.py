"""The runner end to end on real vLLM CPU servers: baseline, ngram and draft_model into SQLite,
then resume after the runner is SIGKILLed mid-sweep (with an HF token in its environment, which
must land nowhere); and `show` on a stored sweep."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from helpers.plans import demo_plan
from helpers.recorded import ROOT
from workbench import launch, store
from workbench.analysis import compare, series


def test_sweep_completes_every_run(sweep_db):
    path, summary, events = sweep_db
    assert summary["completed"] == 3 and summary["failed"] == 0, events
    kinds = [e.KIND for e in events]
    assert kinds[0] == "sweep_started" and kinds[-1] == "sweep_finished"
    assert kinds.count("server_ready") == 3 and kinds.count("run_finished") == 3
    assert "progress" in kinds


def test_stored_figures_follow_vllms_definitions(sweep_db):
    db = store.open_db(sweep_db[0], readonly=True)
    rows = {r.method: r for r in store.runs(db)}
    assert set(rows) == {"baseline", "ngram", "draft_model"}
    for method, n in (("ngram", 3), ("draft_model", 2)):
        r = rows[method]
        last_t = db.execute("SELECT max(t) FROM positions WHERE run_id = ?", [r.id]).fetchone()[0]
        final = db.execute("SELECT position, accepted, drafts FROM positions WHERE run_id = ? AND t = ? "
                           "ORDER BY position", [r.id, last_t]).fetchall()
        # A row for every position 1..N, and the last sample's counters are the run's window.
        assert [p for p, _, _ in final] == list(range(1, n + 1))
        assert final[0][2] == r.drafts > 0
        assert sum(a for _, a, _ in final) == r.accepted
        per_pos = r.per_position
        assert len(per_pos) == n
        assert all(per_pos[i] >= per_pos[i + 1] for i in range(n - 1)), per_pos
        assert r.mal == pytest.approx(1 + sum(per_pos), abs=1e-12)
        assert r.acceptance_rate == pytest.approx(r.accepted / r.draft_tokens)
        assert r.draft_tokens == n * r.drafts
        # vLLM's per-request attribution of the same requests adds up to the same counters: the
        # steps, the accepted tokens, and position by position through each request's histogram.
        spec = db.execute("SELECT sum(spec_drafts), sum(spec_accepted) FROM requests WHERE run_id = ?",
                          [r.id]).fetchone()
        assert tuple(spec) == (r.drafts, r.accepted)
        per_request = db.execute("SELECT spec_histogram, category, spec_drafts FROM requests WHERE run_id = ?",
                                 [r.id]).fetchall()
        summed = [0.0] * n
        for histogram, category, steps in per_request:
            survival = compare.survival_from_histogram(json.loads(histogram))
            assert category in ("math_word", "competition_math", "function_completion", "programming_task")
            for i, p in enumerate(survival):
                summed[i] += p * steps
        assert summed == pytest.approx([a for _, a, _ in final])
        by_category, _ = series.request_data(db, [r.id])
        assert sum(c.requests_steps for c in by_category) == r.drafts
        assert r.prompt_template.startswith("{prompt}") and json.loads(r.warnings) == []
    for r in rows.values():
        assert r.status == "completed" and r.requests_ok == 6 and r.requests_failed == 0
        client = db.execute("SELECT sum(output_tokens) FROM requests WHERE run_id = ?", [r.id]).fetchone()[0]
        assert client == r.output_tokens > 0
        assert abs(client - r.generation_tokens) <= 0.02 * r.generation_tokens
        assert r.output_tok_s == pytest.approx(r.output_tokens / r.window_s)
        assert r.command.startswith("vllm serve ") and r.vllm_version == "0.32.0"
        assert r.temperature == 0.0
        assert db.execute("SELECT count(*) FROM logs WHERE run_id = ?", [r.id]).fetchone()[0] > 0
        # Steady state (both requests in flight) lies inside the window, at a throughput near its.
        assert 0 < r.steady_s <= r.window_s
        assert 0.5 * r.output_tok_s <= r.steady_tok_s <= 3 * r.output_tok_s
        assert r.prefix_cache_queries > 0 and 0 <= r.prefix_cache_hit_rate <= 1
        assert "collapsed" not in [a["kind"] for a in json.loads(r.alarms)]
    assert rows["baseline"].mal is None and "--speculative-config" not in rows["baseline"].command
    assert '"method":"ngram"' in rows["ngram"].command


def test_show_prints_speedups_for_the_sweep(recorded_db):
    """On the sweep recorded on a GPU: the speedups docs/gpu/README.md publishes for it."""
    done = subprocess.run([sys.executable, "-m", "app", "show", "--db", str(recorded_db)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["method", "N", "workload", "conc"]
    baselines = [line.split() for line in lines if line.startswith("baseline")]
    assert [b[5] for b in baselines] == ["1.00", "1.00"]  # no N, MAL or acceptance: empty columns
    ngram = {(r[1], r[3]): r[8] for r in (line.split() for line in lines) if r and r[0] == "ngram" and r[4] == "completed"}
    assert ngram == {("2", "1"): "1.55", ("2", "8"): "1.80", ("4", "1"): "1.16", ("4", "8"): "1.15"}


def _wait_for(path: Path, predicate, timeout: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if path.exists() and predicate(path.read_text()):
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out; events so far:\n{path.read_text() if path.exists() else ''}")


TOKEN = "hf_fakeDraftbenchSecurityProbe7Qx3Zr9Lm2Vb5Nc8"


def _server_environ(runner_pid: int, timeout: float) -> dict:
    """The environment of the vLLM server the runner started (read from /proc while it runs)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            children = psutil.Process(runner_pid).children(recursive=True)
        except psutil.NoSuchProcess:
            break
        for child in children:
            try:
                if "serve" in child.cmdline():
                    return child.environ()
            except psutil.Error:
                continue
        time.sleep(0.5)
    raise AssertionError("no vLLM server appeared under the runner")


@pytest.fixture(scope="module")
def resumed(demo_models, tmp_path_factory):
    """One sweep (baseline, then ngram N=2) by the CLI, with an HF token in its environment:
    SIGKILLed once the baseline is done and the second server is on its way, then run again to
    the end. Its two launches serve both the resume test and the token test below."""
    folder = tmp_path_factory.mktemp("resume")
    plan_file = folder / "plan.toml"
    plan_file.write_text(demo_plan("resume", methods=[{"method": "ngram", "n": 2}],
                                   server={"health_timeout_s": 300}))
    db_path, events, log = folder / "results.sqlite", folder / "events.jsonl", folder / "runner.log"
    env = {**os.environ, "HF_TOKEN": TOKEN, "HUGGING_FACE_HUB_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "app", "run", str(plan_file), "--db", str(db_path), "--log", str(log)]
    with events.open("w") as out:
        first = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=folder)
        try:
            # The token really is in the environment of the processes that write everything.
            environ = _server_environ(first.pid, 400)
            # Kill it once the baseline is done and the second server is on its way.
            _wait_for(events, lambda t: t.count('"server_starting"') == 2, 400)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait()
    db = store.open_db(db_path, readonly=True)
    before = {r.method: r for r in store.runs(db)}
    db.conn.close()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=folder)
    return SimpleNamespace(folder=folder, plan_file=plan_file, db_path=db_path, env=env, environ=environ,
                           before=before, done=done)


@pytest.mark.vllm
def test_sigkilled_runner_resumes_only_the_missing_runs(resumed):
    before, done = resumed.before, resumed.done
    assert before["baseline"].status == "completed" and before["ngram"].status != "completed"
    assert done.returncode == 0, done.stderr[-2000:]
    evs = [json.loads(line) for line in done.stdout.splitlines()]
    assert evs[0]["pending"] == 1
    assert [e["label"] for e in evs if e["event"] == "run_finished"] == ["ngram N=2 · builtin · c=2 · #1"]
    db = store.open_db(resumed.db_path, readonly=True)
    after = {r.method: r for r in store.runs(db)}
    assert after["ngram"].status == "completed"
    # Unchanged but for the lossless check, which the resumed sweep's end adds over all its runs.
    checked = {"accuracy", "graded", "lossless_baseline", "lossless_compared", "lossless_identical",
               "lossless_prefix", "lossless_turned_wrong", "lossless_turned_right"}
    assert {k: v for k, v in after["baseline"].as_dict().items() if k not in checked} == \
           {k: v for k, v in before["baseline"].as_dict().items() if k not in checked}
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # The server of the killed runner did not outlive it: nothing listens on its port, and no
    # process (API server or engine core) is left from it.
    port = int(before["ngram"].command.split("--port ")[1].split()[0])
    assert not launch.port_in_use(port)
    leftover = subprocess.run(["pgrep", "-f", "--", f"--port {port}"], capture_output=True)
    assert leftover.returncode == 1, leftover.stdout


@pytest.mark.vllm
def test_hf_token_is_written_nowhere(resumed):
    """The HF token in the sweep's environment lands in nothing Draftbench writes: not the
    database, the events, the runner's log, nor the exports and reports made from them, not even
    through a runner killed mid-write."""
    assert resumed.environ.get("HF_TOKEN") == TOKEN
    assert resumed.done.returncode == 0, resumed.done.stderr[-2000:]
    folder, db = resumed.folder, resumed.db_path
    con = store.open_db(db, readonly=True)
    assert [r.status for r in store.runs(con)] == ["completed", "completed"]
    assert con.execute("SELECT count(*) FROM logs").fetchone()[0] > 20
    con.conn.close()
    assert TOKEN not in resumed.done.stdout + resumed.done.stderr
    for command in (["export", "--out", str(folder / "export")], ["report", "--out", str(folder / "report.html")],
                    ["export-bench", "1", "--out", str(folder / "bench.json")], ["show", "1", "--json"],
                    ["runs", "--json"]):
        done = subprocess.run([sys.executable, "-m", "app", *command, "--db", str(db)], env=resumed.env, cwd=folder,
                              capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert TOKEN.encode() not in done.stdout + done.stderr, command
    written = [p for p in folder.rglob("*") if p.is_file() and p != resumed.plan_file]
    names = {p.name for p in written}
    assert {"results.sqlite", "events.jsonl", "runner.log", "report.html", "bench.json",
            "speedup_table.csv"} <= names, names
    leaks = [p for p in written if TOKEN.encode() in p.read_bytes() or TOKEN[3:].encode() in p.read_bytes()]
    assert leaks == []
