"""Shared fixtures: the demo model, the vLLM install, one real vLLM CPU server per configuration,
a stand-in vLLM server replaying recorded real output, and a results database recorded on GPUs.

Two tiers: every test whose fixtures start a real vLLM server (they all ask for `real_vllm`)
gets the `vllm` marker at collection; tests that start one through the CLI or the app carry it
themselves, and tests that build for minutes without vLLM (the desktop bundle, a demo model
rebuild) carry `build`. `pytest -m "vllm or build"` is the slow tier, `-m "not vllm and not build"`
the fast one."""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Settings written by the app under test, and the probe answers it caches, go to throwaway folders,
# never the user's.
os.environ["DRAFTBENCH_CONFIG_DIR"] = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"draftbench-test-config-{os.getpid()}")
os.environ["DRAFTBENCH_CACHE_DIR"] = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"draftbench-test-cache-{os.getpid()}")

from helpers.cpu_tuning import forget, measure_once, seeded  # noqa: E402
from helpers.hub import GRANTED, StandInHub, demo_repos  # noqa: E402
from helpers.plans import DRAFT, NGRAM, demo_plan  # noqa: E402
from helpers.recorded import DEMO_DB, GPU_DB, copy_db  # noqa: E402
from helpers.standins.vllm_server import StandinVllm  # noqa: E402
from helpers.vllm_servers import server_config, start_server  # noqa: E402
from workbench import launch, plan, store  # noqa: E402
from workbench.checkpoints import demo  # noqa: E402
from workbench.host import engine, vllm_cli  # noqa: E402
from workbench.sweep import runner  # noqa: E402

measure_once()
seeded(Path(os.environ["DRAFTBENCH_CACHE_DIR"]))


def pytest_unconfigure(config):
    forget()


def _markexpr(config) -> str:
    return " ".join((config.option.markexpr or "").split())


# The two tiers' selections, as scripts/bootstrap.sh writes them, and the older spellings that
# predate the `build` marker.
FAST_TIER = {"not vllm and not build", "not vllm"}
SLOW_TIER = {"vllm or build", "vllm"}
FAST_TIMEOUT_S = 300


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts). The fast tier, `-m "not vllm and not build"`, runs on two workers a core
    (up to eight): many of its tests wait on a stand-in server, a child process or a timer, and a
    second worker keeps the core busy meanwhile (on 2 cores: 153-168 s on four workers, 170 s on
    three, 192-202 s on two). The slow tier, `-m "vllm or build"`, runs on two workers: a vLLM CPU launch is
    three processes importing vLLM one after another, about one core, so two tests' launches
    overlap on two cores (from a clean clone 14.5-16 min, against 33-36 in one process). Its tests
    do not time the servers: what they check holds however slowly a server answers on a loaded
    machine (the one check of a sampling cadence runs against the stand-in, tests/test_faults.py).
    Anything else, `pytest` alone included, runs in one process."""
    markexpr = _markexpr(config)
    cpus = os.cpu_count() or 1
    if markexpr in FAST_TIER:
        return min(8, 2 * cpus)
    if markexpr in SLOW_TIER:
        return 2 if cpus >= 2 else 0
    return 0


# The vLLM tier's modules that share a session's real servers run on one worker, so those start
# once: the three-server sweep of `sweep_db`, and the draft-model server of `draft_server` (a
# session fixture starts once per worker that asks for it). Every other module is a group of its
# own, so its module fixtures start once too.
SHARED_SWEEP = {"test_exports", "test_parallel_sweep", "test_runner"}
SHARED_DRAFT = {"test_launch_modes", "test_measurement", "test_memory", "test_security", "test_train",
                "test_train_page", "test_vllm_server"}
SHARED = {"sweep_db": SHARED_SWEEP, "draft_server": SHARED_DRAFT}
# Seconds each group took on 2 cores (setup and calls, two workers): the longest are handed out
# first, so the two workers finish together. A module not listed counts 60 s.
GROUP_SECONDS = {"draft_server": 570, "test_adaptive": 500, "sweep_db": 370, "test_faults": 270,
                 "test_remote": 260, "test_gui_sweep": 130, "test_packaging": 120, "test_demo_model": 20}


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0].rpartition("/")[2].removesuffix(".py")


def _group(module: str) -> str:
    return next((fixture for fixture, modules in SHARED.items() if module in modules), module)


# The fast tier's modules whose tests share a costly module fixture run on one worker each, so it
# is built once: xdist's default hands a module's tests to several workers, and each built it (the
# what-if sweep and the Ray cluster twice a run). test_what_if's what-if sweep through the stand-in
# (about 30 s), test_parallel_sweep's serial and two-slot stand-in sweeps (about 28 s),
# test_cluster's local Ray cluster, test_lossless's two stand-in sweeps. Every other test of that tier is handed out alone.
FAST_SHARED = {"test_what_if", "test_parallel_sweep", "test_cluster", "test_lossless"}


def pytest_xdist_make_scheduler(config, log):
    """The vLLM tier's workers get whole groups (above), longest first; the fast tier's, whole
    FAST_SHARED modules (first, being the largest units) and single tests otherwise. Not xdist's
    `loadgroup`: pytest-xdist 3.8 names a test's group by rewriting `Node._nodeid`, which pytest 9
    no longer reads, so its groups silently fall apart (a module fixture then starts on both workers)."""
    markexpr = _markexpr(config)
    if markexpr not in FAST_TIER | SLOW_TIER:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        def remove_node(self, node):
            """xdist's own puts a crashed worker's whole unit back in the queue, the test that
            crashed it included, so each replacement worker ran that test again and crashed too, up
            to the restart limit (a hang ended by faulthandler, 17 times over). Here the crashed
            test is reported once, and the rest of its unit runs on."""
            workload = self.assigned_work.pop(node)
            if not self._pending_of(workload):
                return None
            scope, crashed = next((s, nodeid) for s, unit in workload.items() for nodeid, done in unit.items() if not done)
            workload[scope][crashed] = True
            self.workqueue.update({s: unit for s, unit in workload.items() if not all(unit.values())})
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

    if markexpr in FAST_TIER:
        class FixtureGroups(Groups):
            def _split_scope(self, nodeid: str) -> str:
                module = _module(nodeid)
                return module if module in FAST_SHARED else nodeid

        return FixtureGroups(config, log)

    class ServerGroups(Groups):
        def _split_scope(self, nodeid: str) -> str:
            return _group(_module(nodeid))

    config.option.loadscopereorder = False  # keep the collection's order: longest first
    return ServerGroups(config, log)


def _slow(item) -> bool:
    return bool(item.get_closest_marker("vllm") or item.get_closest_marker("build"))


@pytest.hookimpl(tryfirst=True)  # before the mark plugin selects by `-m "vllm or build"`
def pytest_collection_modifyitems(config, items):
    # item.fixturenames is the whole closure, so a fixture built on draft_server counts too.
    for item in items:
        if "real_vllm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.vllm)
    for item in items:
        module = _module(item.nodeid)
        for fixture, modules in SHARED.items():
            if fixture in getattr(item, "fixturenames", ()) and module not in modules:
                raise pytest.UsageError(f"{module} uses {fixture}: add it to its set in SHARED in tests/conftest.py, "
                                        "or its servers start twice under two workers")
    # A fast-tier test takes under a minute even on a loaded machine: one stuck at 300 s is a hang,
    # failed with every thread's stack (pytest-timeout) instead of holding the run to pyproject's 900 s.
    for item in items:
        if not _slow(item) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(FAST_TIMEOUT_S))
    # Longest groups first; the order inside a module is kept, as sort is stable.
    items.sort(key=lambda it: -GROUP_SECONDS.get(_group(_module(it.nodeid)), 60) if _slow(it) else 0)


_GROUP_TIMES: dict[str, list] = {}  # group -> [worker, seconds, finished at (s from the first report)]
_FIRST_REPORT: list[float] = []


def pytest_runtest_logreport(report):
    """The slow tier's groups timed as they ran (setup, call and teardown of their tests, on which
    worker, and when each finished), so GROUP_SECONDS can follow the suite and a worker left idle
    at the end shows."""
    worker = getattr(getattr(report, "node", None), "gateway", None)
    if worker is None:  # only the controller of an xdist run sees every worker's reports
        return
    now = time.monotonic()
    if not _FIRST_REPORT:
        _FIRST_REPORT.append(now - report.duration)
    row = _GROUP_TIMES.setdefault(_group(_module(report.nodeid)), [worker.id, 0.0, 0.0])
    row[1] += report.duration
    row[2] = now - _FIRST_REPORT[0]


def pytest_terminal_summary(terminalreporter, config):
    if _markexpr(config) not in SLOW_TIER or not _GROUP_TIMES:
        return
    terminalreporter.section("groups (worker, seconds, finished at)")
    for group, (worker, seconds, end) in sorted(_GROUP_TIMES.items(), key=lambda kv: (kv[1][0], kv[1][2])):
        terminalreporter.write_line(f"{worker}  {seconds:6.0f} s  at {end:6.0f} s  {group}")


@pytest.fixture(autouse=True)
def _garbage_collected_on_the_main_thread():
    """Once a test has started the app's worker, automatic garbage collection is off for the rest of
    this process (app.jobs.worker.collect_on_gui_thread) and happens on the GUI thread's timer,
    which runs only inside an event loop: between tests, where none runs, it is done here, on the
    main thread, after the test's widgets were closed. What is still alive then (modules a test
    imported: transformers, Ray) is frozen as the app freezes its start-up, so that a collection on
    the GUI thread during the next test walks only that test's objects, not half a million others
    (260 ms: the window would look frozen to a test that times it)."""
    yield
    collector = getattr(sys.modules.get("app.jobs.worker"), "_collector", None)
    if collector is not None:
        collector.check()
        gc.freeze()


@pytest.fixture(autouse=True)
def _real_servers_carry_the_marker(request, monkeypatch):
    """Outside the `vllm` tier a real vLLM server started in this process fails the test at once,
    so the marker stays true and the fast tier fast."""
    if request.node.get_closest_marker("vllm"):
        return
    start = launch.LocalServer.start

    def guarded(self, *args, **kwargs):
        if vllm_cli.SHIM in self.spec.argv or self.spec.kind == "docker":
            pytest.fail("this test starts a real vLLM server: mark it `vllm`, or use the stand-in")
        return start(self, *args, **kwargs)

    monkeypatch.setattr(launch.LocalServer, "start", guarded)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """A real OpenSSH server on 127.0.0.1 for the remote-host tests of one module."""
    from helpers import sshd as sshd_mod

    server = sshd_mod.start(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def no_agent(monkeypatch):
    # Only the throwaway keys count, whatever agent the machine running the tests has.
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture(scope="session")
def demo_models() -> dict[str, Path]:
    return demo.ensure()


@pytest.fixture(scope="session")
def vllm_install() -> engine.VllmInstall:
    install = engine.probe(sys.executable)
    assert install.found, "the test environment must have vLLM (the `cpu` extra)"
    return install


@pytest.fixture(scope="session")
def real_vllm(vllm_install) -> engine.VllmInstall:
    """Asked for by every fixture that starts a real vLLM server: it puts their tests in the
    `vllm` tier (see pytest_collection_modifyitems)."""
    return vllm_install


@pytest.fixture(scope="session")
def standin_server():
    """A stand-in for draft_server (the same configuration, recorded: tests/helpers/standins/vllm_server.py),
    shared like it: its counters only grow, so tests read windows, not totals."""
    with StandinVllm("draft_model_n3", api_key="standin-run-key-0123456789abcdef") as server:
        yield server


@pytest.fixture
def demo_db(tmp_path) -> Path:
    """DEMO_DB copied and brought to this version's schema, for a test that may write to it."""
    path = copy_db(DEMO_DB, tmp_path / "results.sqlite")
    store.open_db(path).conn.close()
    return path


@pytest.fixture
def live(qtbot):
    """The Live page alone, shown at 1280x800."""
    from app.pages.live import LivePage

    page = LivePage()
    qtbot.addWidget(page)
    page.resize(1280, 800)
    page.show()
    qtbot.waitExposed(page)
    return page


@pytest.fixture(scope="session")
def recorded_db(tmp_path_factory) -> Path:
    """GPU_DB copied and brought to this version's schema once, for tests that only read stored
    rows; a test that changes a database copies this one first."""
    path = copy_db(GPU_DB, tmp_path_factory.mktemp("recorded") / GPU_DB.name)
    store.open_db(path).conn.close()
    return path


@pytest.fixture(scope="session")
def draft_server(demo_models, real_vllm):
    """The demo target with the noisy-copy draft, N=3: shared by every test that only reads from it."""
    config = server_config(str(demo_models[demo.TARGET.name]), "draft_model", 3,
                           str(demo_models[demo.DRAFT_NOISY.name]))
    srv = start_server(config, real_vllm)
    yield srv
    srv.stop()




@pytest.fixture(scope="session")
def sweep_db(demo_models, real_vllm, tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "results.sqlite"
    events = []
    p = plan.loads(demo_plan("integration", methods=[NGRAM, DRAFT],
                             server={"health_timeout_s": 300}))
    summary = runner.Runner(p, str(path), real_vllm, emit=events.append).run()
    return path, summary, events


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """The Hub stand-in (tests/helpers/hub.py) with demo_repos, as huggingface_hub's endpoint, and a
    Hugging Face home of this test's own."""
    server = demo_repos(StandInHub(granted_tokens={GRANTED})).start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for name in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    # A token saved by `hf auth login` on this machine must not leak into the tests.
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
    monkeypatch.setattr(hc, "HF_STORED_TOKENS_PATH", str(tmp_path / "hf" / "stored_tokens"))
    yield server
    server.stop()
