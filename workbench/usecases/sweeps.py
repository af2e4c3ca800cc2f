"""Running a plan, as `draftbench run` does it: the plan read against the vLLM that will serve it,
then (after the preflight findings) the prompts, the demo model when the plan uses it, the sweep."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from workbench import events, launch, paths, plan, store
from workbench.checkpoints import demo
from workbench.errors import DraftbenchError
from workbench.host import engine
from workbench.load import workloads
from workbench.sweep import cluster as ray_cluster
from workbench.sweep import executor as sweep_executor
from workbench.sweep import eta, runner, scheduler
from workbench.sweep.adaptive import AdaptiveRunner


class RunError(DraftbenchError):
    """Why the plan cannot run, in one line."""


@dataclass(frozen=True)
class Loaded:
    plan: plan.Plan
    vllm: engine.VllmInstall
    local: bool  # served by a vLLM started here (not docker, not an attached server)
    servings: launch.Servings  # the vLLM each server runs, asked once (a docker image's by running it)


def load_plan(path: str, vllm_python: str | None = None, adaptive: bool = False,
              check_packages: bool = True) -> Loaded:
    """The interpreter is `vllm_python`, else the plan's profile's, else the default. With
    `check_packages`, methods whose package that local vLLM environment lacks are skipped; a dry run
    leaves it off to show every launch, and a docker or attached server's packages cannot be asked."""
    try:
        p = plan.load(path)
        profile = p.runs[0].server.profile if p.runs else None
        vllm = engine.probe(vllm_python or (profile.python if profile else None))
        local = profile is None or profile.kind == "local"
        if check_packages and local:
            p = plan.load(path, available_modules=engine.optional_modules(vllm))
    except plan.PlanError as exc:
        raise RunError(str(exc)) from None
    if adaptive and p.mode == "what-if":
        raise RunError("--adaptive predicts N from measured runs; a what-if sweep runs its whole grid")
    if adaptive:
        p.mode = "adaptive"
    return Loaded(p, vllm, local, launch.probed(p, vllm))


def slots_for(loaded: Loaded, gpu_list: str | None, parallel: str | int | None,
              cluster: bool = False) -> list[scheduler.Slot]:
    """The GPU slots the sweep gets (one unpinned slot: the serial sweep), or RunError in one line.
    On a Ray cluster the cluster places the servers: only `parallel` (a cap) is checked."""
    try:
        if parallel is not None:
            parallel = scheduler.parse_parallel(parallel, "--parallel")
        if cluster:
            return [scheduler.Slot(0, None)]
        return scheduler.resolve(loaded.plan, loaded.vllm, gpu_list, parallel)
    except (ValueError, scheduler.SlotError) as exc:
        raise RunError(str(exc)) from None


def connect_cluster(address: str) -> "ray_cluster.Cluster":
    """The Ray cluster at `address` ('auto': the one `ray start` left running), or RunError."""
    try:
        return ray_cluster.connect(address)
    except ray_cluster.ClusterError as exc:
        raise RunError(str(exc)) from None


def open_existing(db_path: str | Path | None) -> store.Database | None:
    """The results database read-only for the findings about runs already in it; None when it does not exist yet."""
    path = Path(db_path or paths.default_db())
    if not path.exists():
        return None
    try:
        return store.open_db(path, readonly=True)
    except store.StoreError as exc:
        raise RunError(str(exc)) from None


def run_plan(p: plan.Plan, vllm: engine.VllmInstall, db_path: str | Path | None, emit: events.Emit, *,
             local: bool = True, events_path: str | None = None, progress: demo.Progress | None = demo.main_progress,
             on_start: Callable[[], object] | None = None, slots: list[scheduler.Slot] | None = None,
             cluster: "ray_cluster.Cluster | None" = None, servings: launch.Servings | None = None) -> dict[str, Any] | None:
    """The sweep's summary, or None when it was interrupted (its running server is stopped first).
    `local`: served by a vLLM started here, which must then exist; `progress` reports the demo
    model's build; `on_start` is called once the sweep is about to start
    (the CLI turns SIGTERM into an interrupt there, not before); `slots` are the GPU slots
    (`slots_for`), `cluster` a Ray cluster to run the servers on instead (`connect_cluster`);
    `servings`, the vLLM each server runs (`Loaded.servings`)."""
    if local and not vllm.found:
        raise RunError(f"no vLLM in {vllm.python}: install Draftbench with the `cpu` or `gpu` extra, "
                       "or pass --vllm-python PATH")
    try:
        prompts = runner.load_workloads(p)
    except workloads.WorkloadError as exc:
        raise RunError(str(exc)) from None
    demo_folders = {str(demo.folder(m)) for m in demo.ALL}
    if any(t in demo_folders or d in demo_folders for t, d in {(r.server.target, r.server.draft) for r in p.runs}):
        try:
            demo.ensure(progress=progress)
        except demo.DemoModelError as exc:
            raise RunError(str(exc)) from None
    if local and cluster is None and p.runs:
        # Servers started here: what they took is this machine's, for the next sweep's ETA.
        emit = eta.recording(emit, p.runs[0].server.target)
    runner_class = AdaptiveRunner if p.mode == "adaptive" else runner.Runner
    executor = (ray_cluster.RayExecutor(cluster, p.parallel) if cluster is not None
                else sweep_executor.ThreadExecutor(slots))
    try:
        sweep = runner_class(p, str(Path(db_path or paths.default_db())), vllm, emit=emit, events_path=events_path,
                             prompts=prompts, executor=executor, servings=servings)
    except store.StoreError as exc:
        raise RunError(str(exc)) from None
    if on_start is not None:
        on_start()
    try:
        return sweep.run()
    except KeyboardInterrupt:
        sweep.cancel_running()
        return None
    except Exception as exc:
        sweep.fail(exc)
        raise


def plan_file_of(db_path: str | Path, experiment_id: int) -> Path:
    """A plan file that runs `experiment_id` again (a resume: what it has not completed): the file
    it was read from while that still holds the same text, so its relative paths mean what they
    meant; else the stored text, written under the data directory. RunError in one line."""
    try:
        db = store.open_db(db_path, readonly=True)
    except store.StoreError as exc:
        raise RunError(str(exc)) from None
    try:
        source = store.experiment_source(db, experiment_id)
    finally:
        store.close(db)
    if source is None:
        raise RunError(f"no experiment {experiment_id} in {db_path}")
    text, path = source
    try:
        if path and Path(path).is_file() and Path(path).read_text() == text:
            return Path(path)
        folder = paths.data_dir() / "plans"
        folder.mkdir(parents=True, exist_ok=True)
        out = folder / f"experiment-{experiment_id}.toml"
        out.write_text(text)
        return out
    except OSError as exc:
        raise RunError(f"cannot write the plan of experiment {experiment_id}: {exc.strerror or exc}") from None
