"""The sweep clock: servers and runs timed apart, so the ETA holds when server starts dominate."""

from workbench import events
from workbench.sweep.eta import SweepClock


class Clock:
    t = 0.0

    def __call__(self):
        return self.t


def _sweep(clock, sweep, start_s=40.0, run_s=5.0, servers=3, runs_per_server=3, stop_after=None):
    """Feed a sweep of `servers` x `runs_per_server` runs with fixed times; yield after each event."""
    sweep.feed(events.SweepStarted(experiment=1, db="x", runs=servers * runs_per_server,
                                   pending=servers * runs_per_server))
    run = 0
    for s in range(1, servers + 1):
        sweep.feed(events.ServerStarting(run=run + 1, command="vllm serve", index=s, servers=servers))
        yield "starting"
        clock.t += start_s
        sweep.feed(events.ServerReady(seconds=start_s, port=1))
        for _ in range(runs_per_server):
            run += 1
            sweep.feed(events.RunStarted(run=run, label=f"r{run}", index=run, total=servers * runs_per_server))
            yield "running"
            clock.t += run_s
            sweep.feed(events.RunFinished(run=run, label=f"r{run}", output_tok_s=1.0, mal=None,
                                          acceptance_rate=None))
            yield "finished"


def test_the_eta_counts_server_starts_and_runs_apart():
    clock = Clock()
    sweep = SweepClock(now=clock)
    total = 3 * 40.0 + 9 * 5.0
    seen = []
    for state in _sweep(clock, sweep):
        left = sweep.seconds_left()
        if left is None:
            seen.append(None)
            continue
        # With constant times the estimate is exact at every step, also right after a run ends
        # and the next server is still to start.
        assert abs(left - (total - clock.t)) < 1e-6, (state, clock.t, left)
        seen.append(left)
    assert seen[0] is None and "once a server has started" in SweepClock().text()
    assert seen[-1] == 0.0 and any(v and v > 80 for v in seen)


def test_the_eta_text_and_its_end():
    clock = Clock()
    sweep = SweepClock(now=clock)
    steps = _sweep(clock, sweep)
    for _ in range(3):          # a server up, one run finished
        next(steps)
    assert sweep.text() == "ETA 2 min 00 s"    # 2 servers x 40 s + 8 runs x 5 s
    next(steps)                 # the next run starts; the clock runs down while it runs
    clock.t += 2.0
    assert sweep.text() == "ETA 1 min 58 s"
    sweep.feed(events.SweepFinished(experiment=1, seconds=1.0, completed=9, failed=0))
    assert sweep.seconds_left() is None and sweep.text() == ""


def test_the_live_page_shows_the_clock(qtbot):
    from app.pages.live import LivePage

    page = LivePage()
    qtbot.addWidget(page)
    page.on_event(events.SweepStarted(experiment=1, db="x", runs=9, pending=9))
    page.on_event(events.ServerStarting(run=1, command="vllm serve", index=1, servers=3))
    # Before any server has started there is no figure, only the reason.
    assert "starting server 1 of 3" in page.eta.text() and "once a server has started" in page.eta.text()
    page.on_event(events.ServerReady(seconds=30.0, port=1))
    page.on_event(events.RunStarted(run=1, label="r1", index=1, total=9))
    page.on_event(events.RunFinished(run=1, label="r1", output_tok_s=1.0, mal=None, acceptance_rate=None))
    # One start (30 s) and one run measured: 2 servers and 8 runs to go, whatever the run took.
    assert page.eta.text().startswith("run 2 of 9 · ETA 1 min")
