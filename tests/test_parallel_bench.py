"""bench/parallel_sweep.py's own arithmetic: where each server's time went, from the events a
sweep emits (the same event classes the runner sends), serially and on two slots interleaved."""

from helpers.recorded import bench_module
from workbench import events

bench = bench_module("parallel_sweep")


def _server(t, run, slot=None, ready=2.0):
    return [(t, events.ServerStarting(run=run, command="vllm serve", slot=slot)),
            (t + ready, events.ServerReady(seconds=ready, port=8000, slot=slot))]


def _run(t0, t1, run, slot=None):
    return [(t0, events.RunStarted(run=run, label=f"run {run}", index=run, total=4, slot=slot)),
            (t1, events.RunFinished(run=run, label=f"run {run}", output_tok_s=1.0, mal=None, acceptance_rate=None))]


def test_serial_phases_split_each_servers_time_at_its_events():
    timed = (_server(0.0, 1, ready=10.0) + _run(11.0, 15.0, 1) + _run(15.0, 20.0, 2)
             + _server(23.0, 3, ready=8.0) + _run(31.5, 40.0, 3))
    got = bench.phases(timed, end=42.0)
    assert got == [{"slot": None, "ready_s": 10.0, "setup_s": 1.0, "runs_s": 9.0, "stop_s": 3.0, "span_s": 23.0},
                   {"slot": None, "ready_s": 8.0, "setup_s": 0.5, "runs_s": 8.5, "stop_s": 2.0, "span_s": 19.0}]
    assert bench.phase_line(got) == "start 9.0, setup 0.8, runs 8.8, stop 2.5"


def test_two_slots_interleaved_keep_each_servers_phases_apart():
    # slot 1's server starts while slot 0's is between runs; a run finishing is matched to the
    # slot of its RunStarted (RunFinished names no slot).
    timed = sorted(_server(0.0, 1, slot=0, ready=5.0) + _server(1.0, 2, slot=1, ready=7.0)
                   + _run(6.0, 9.0, 1, slot=0) + _run(9.0, 12.0, 2, slot=1)
                   + _server(10.0, 3, slot=0, ready=4.0) + _run(15.0, 17.0, 3, slot=0), key=lambda x: x[0])
    got = bench.phases(timed, end=20.0)
    assert got == [{"slot": 0, "ready_s": 5.0, "setup_s": 1.0, "runs_s": 3.0, "stop_s": 1.0, "span_s": 10.0},
                   {"slot": 1, "ready_s": 7.0, "setup_s": 1.0, "runs_s": 3.0, "stop_s": 8.0, "span_s": 19.0},
                   {"slot": 0, "ready_s": 4.0, "setup_s": 1.0, "runs_s": 2.0, "stop_s": 3.0, "span_s": 10.0}]


def test_a_server_that_never_got_ready_has_only_its_span():
    timed = [(0.0, events.ServerStarting(run=1, command="vllm serve")),
             (30.0, events.RunFailed(run=1, error="the server exited"))]
    assert bench.phases(timed, end=31.0) == [{"slot": None, "span_s": 31.0}]
