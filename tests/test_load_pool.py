"""The load generator's process pool against a streaming stand-in (bench/sse_standin.py): every
prompt sent once, results in prompt order, the concurrency shared out, CPU time reported, and a
server that goes away answered with failed requests rather than a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from workbench import launch, load
from workbench.host import process
from workbench.load import pool
from workbench.load.workloads import Prompt

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def standin():
    port = launch.free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "sse_standin.py"), "--port", str(port),
                             "--workers", "1", "--step-ms", "1"], start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(base + "/health", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.05)
    yield base, proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _prompts(n: int) -> list[Prompt]:
    return [Prompt(f"p{i}", "fam" if i % 2 else "other", f"prompt {i}") for i in range(n)]


def test_processes_follow_the_concurrency():
    assert pool.processes_for(1, cpus=16) == 1
    assert pool.processes_for(128, cpus=16) == 1
    assert pool.processes_for(129, cpus=16) == 2
    assert pool.processes_for(256, cpus=16) == 2
    assert pool.processes_for(4096, cpus=16) == 8
    assert pool.processes_for(4096, cpus=2) == 1


def test_two_processes_send_every_prompt_once(standin):
    base, _ = standin
    seen = []
    with pool.ClientPool(base, "key", "standin", processes=2) as clients:
        out = clients.run(_prompts(21), load.Sampling(12, 0.0), concurrency=5, on_result=seen.append)
    assert out.processes == 2
    assert [r.idx for r in out.results] == list(range(21))
    assert [r.prompt_id for r in out.results] == [f"p{i}" for i in range(21)]
    assert all(r.ok and r.output_tokens == 12 and r.finish_reason == "length" for r in out.results), \
        [r.error for r in out.results if not r.ok]
    assert sorted(r.idx for r in seen) == list(range(21))
    assert all(r.ttft_ms is not None and len(r.chunk_gaps_ms) == 11 for r in out.results)
    assert out.results[1].category == "fam"
    # 21 requests of 12 steps of at least 1 ms, at most 5 at a time: the window cannot be shorter.
    assert out.wall_s >= 21 / 5 * 12 * 0.001
    assert 0 < out.client_cpu_s < out.wall_s * 2


def test_a_second_job_reuses_the_processes(standin):
    base, _ = standin
    with pool.ClientPool(base, "key", "standin", processes=2) as clients:
        first = clients.run(_prompts(4), load.Sampling(4, 0.0), concurrency=2)
        second = clients.run(_prompts(6), load.Sampling(3, 0.0), concurrency=6)
    assert sum(r.output_tokens for r in first.results) == 16
    assert sum(r.output_tokens for r in second.results) == 18


def test_a_server_that_dies_fails_the_requests_and_returns(standin):
    base, proc = standin
    with pool.ClientPool(base, "key", "standin", processes=1, timeout_s=20) as clients:
        clients.run(_prompts(1), load.Sampling(2, 0.0), concurrency=1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        out = clients.run(_prompts(3), load.Sampling(50, 0.0), concurrency=3)
    assert len(out.results) == 3
    assert not any(r.ok for r in out.results)
    assert all(r.error for r in out.results)


HOLDER = """
import sys
from workbench.host import process
from workbench.load import pool
if __name__ == "__main__":
    clients = pool.ClientPool("http://127.0.0.1:9", "key", "m", processes=2).start()
    print(" ".join(str(p.pid) for p in clients._procs), flush=True)
    sys.stdin.read()
"""


def test_a_sigkilled_runner_leaves_no_client_process_behind(tmp_path):
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=ROOT)
    pids = [int(x) for x in holder.stdout.readline().split()]
    assert len(pids) == 2 and all(process.alive(p) for p in pids)
    holder.kill()
    holder.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(process.alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(process.alive(p) for p in pids)


def test_ctrl_c_to_the_process_group_leaves_the_workers_to_the_runner(standin):
    """A SIGINT sent to every process (as Ctrl-C or `timeout -s INT` does) does not kill a worker
    mid-job with a traceback: the job finishes, and the runner decides what to do."""
    base, _ = standin
    with pool.ClientPool(base, "key", "standin", processes=1) as clients:
        for p in clients._procs:
            os.kill(p.pid, signal.SIGINT)
        out = clients.run(_prompts(3), load.Sampling(5, 0.0), concurrency=3)
        assert all(p.is_alive() for p in clients._procs)
    assert [r.ok for r in out.results] == [True, True, True]
