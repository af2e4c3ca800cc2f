"""The same plan fanned out over a Ray cluster (`draftbench run plan.toml --ray auto|ADDRESS`).

A runner given a `RayExecutor` (an executor of workbench.sweep.executor) hands out one Ray task
per server configuration, asking for `num_gpus` = its tensor-parallel size: inside it, the
runner's own job (workbench.sweep.job) starts the server on the GPUs Ray gave the task
and measures its runs. What the job writes and emits streams back to the driver as the same
messages a local job sends (workbench.sweep.outbox), already keyed by the driver's run ids (the
driver registered the runs before handing them out), and the driver alone writes the local
database. A task whose worker is lost (killed, its node gone) has its unfinished runs cleared and
handed to a new task, which Ray places wherever GPUs are free.

Ray is an optional extra (`pip install 'draftbench[cluster]'`, Ray core only): it is imported
when a sweep asks for a cluster, never otherwise.
"""

from __future__ import annotations

import queue
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from workbench.errors import DraftbenchError
from workbench.host import gpus
from workbench.host.slots import Slot
from workbench.sweep import outbox
from workbench.sweep.job import Context, ServerJob, Work

MAX_ATTEMPTS = 3
BATCH_S = 0.2


class ClusterError(DraftbenchError):
    """A one-line reason the cluster cannot be used."""


@dataclass(frozen=True)
class Cluster:
    address: str
    gpus: float
    nodes: int


def _ray() -> ModuleType:
    try:
        # Deferred: Ray is an optional extra, and a large import
        import ray
    except ImportError:
        raise ClusterError("--ray needs Ray on this machine: pip install 'draftbench[cluster]'") from None
    return ray


def _answers(address: str, timeout_s: float = 3.0) -> bool:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"--ray takes auto or the head's HOST:PORT (e.g. 10.0.0.5:6379), not {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def connect(address: str) -> Cluster:
    """Joins the cluster (or uses the one this process already joined) and says what it has."""
    ray = _ray()
    if not ray.is_initialized():
        if address != "auto" and not _answers(address):
            raise ClusterError(f"no Ray cluster answers at {address} (nothing listens there): start one with "
                               "`ray start --head` or check the address")
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ClusterError(f"cannot join the Ray cluster at {address}: {first}") from None
    resources = ray.cluster_resources()
    found = Cluster(address, float(resources.get("GPU", 0)), len([n for n in ray.nodes() if n.get("Alive")]))
    if found.gpus < 1:
        raise ClusterError(f"the Ray cluster at {address} declares no GPUs: a server needs at least one")
    return found


def _run_job(ctx: Context, work: Work, slot_index: int) -> Iterator[list[dict[str, Any]]]:
    """On a worker: the job on the GPUs Ray gave this task, its messages yielded in batches."""
    ray = _ray()
    platform, _ = gpus.detect()
    ctx = replace(ctx, host_platform=platform, environment=gpus.environment(platform))
    profile = work.server.profile
    logical = ctx.vllm.build == "cpu" or profile.platform == "cpu"
    slot = Slot(slot_index, tuple(int(g) for g in ray.get_gpu_ids()), logical)
    messages: queue.Queue[dict[str, Any]] = queue.Queue()
    job = ServerJob(ctx, work, slot, outbox.Sender(lambda message: messages.put(outbox.encode(message))))
    failed: list[BaseException] = []

    def run() -> None:
        try:
            job.run()
        except BaseException as exc:  # noqa: BLE001 - raised again below, in the task
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True, name="job")
    thread.start()
    while thread.is_alive() or not messages.empty():
        batch = []
        try:
            batch.append(messages.get(timeout=BATCH_S))
            while True:
                batch.append(messages.get_nowait())
        except queue.Empty:
            pass
        if batch:
            yield batch
    if failed:
        raise failed[0]


class RayExecutor:
    """The jobs as Ray tasks on `cluster` (which `connect` joined), at most `parallel` (the plan's)
    at once; with "auto" or none, every server is handed to Ray at once, and Ray starts each where
    GPUs are free."""

    def __init__(self, cluster: Cluster, parallel: int | str | None = None):
        self.cluster = cluster
        self.parallel = parallel
        self.cancelled = False
        self.refs: list[Any] = []  # Ray's object refs (ray is untyped)

    def run(self, works: list[Work], ctx: Context, writer: outbox.Writer) -> int:
        ray = _ray()
        task = ray.remote(_run_job)
        cap = self.parallel if isinstance(self.parallel, int) else len(works)
        todo = [(w, 1) for w in works]
        free_slots = list(range(cap))
        running: dict[int, tuple[threading.Thread, tuple[Work, int, list[Any]]]] = {}
        self.refs = []
        started = 0
        try:
            while todo or running:
                while todo and free_slots and not self.cancelled:
                    work, attempt = todo.pop(0)
                    slot = free_slots.pop(0)
                    outcome: list[Any] = []  # _consume's: the completed run ids, then why the worker was lost
                    # One task per server, asking for the GPUs its tensor parallelism needs.
                    ref = task.options(num_gpus=work.server.profile.tensor_parallel_size, max_retries=0,
                                       num_returns="streaming").remote(ctx, work, slot)
                    self.refs.append(ref)
                    started += 1
                    thread = threading.Thread(target=_consume, args=(ray, ref, writer, outcome), daemon=True)
                    thread.start()
                    running[slot] = (thread, (work, attempt, outcome))
                for slot, (thread, (work, attempt, outcome)) in list(running.items()):
                    thread.join(0.1)
                    if thread.is_alive():
                        continue
                    del running[slot]
                    free_slots.append(slot)
                    lost = outcome[1] if len(outcome) > 1 else None
                    if lost is not None and not self.cancelled:
                        _redo(work, attempt, outcome[0], lost, writer, todo)
                if self.cancelled and not running:
                    break
        except KeyboardInterrupt:
            self.stop()
            raise
        return started

    def stop(self) -> None:
        """Every task is cancelled; killing its worker stops its server (die_with_parent)."""
        self.cancelled = True
        ray = _ray()
        for ref in self.refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - a task already finished
                pass


def _redo(work: Work, attempt: int, completed: set[int], error: str, writer: outbox.Writer,
          todo: list[tuple[Work, int]]) -> None:
    """A lost worker's unfinished runs cleared and queued for a new task, or failed after
    MAX_ATTEMPTS."""
    rest = [r for r in work.runs if work.ids[r.key] not in completed]
    if not rest:
        return
    run_ids = [work.ids[r.key] for r in rest]
    writer.put(outbox.ResetRuns(run_ids))
    label = f"{work.server.method}" + ("" if work.server.n is None else f" N={work.server.n}")
    if attempt >= MAX_ATTEMPTS:
        for run_id in run_ids:
            writer.put(outbox.RunFailed(run_id, f"its Ray worker was lost {attempt} times: {error}", ""))
        return
    print(f"cluster: the worker serving {label} was lost ({error}); its {len(rest)} unfinished run(s) "
          "go to another", file=sys.stderr)
    todo.append((replace(work, runs=rest), attempt + 1))


def _consume(ray: ModuleType, ref: Any, writer: outbox.Writer, outcome: list[Any]) -> None:
    """Applies one task's messages as they arrive; `outcome` gets the ids of the runs it
    completed and, when its worker was lost, why."""
    completed: set[int] = set()
    outcome.append(completed)
    try:
        for batch_ref in ref:
            for data in ray.get(batch_ref):
                message = outbox.decode(data)
                if isinstance(message, outbox.RunCompleted):
                    completed.add(message.run_id)
                writer.put(message)
    # A message that does not decode (a worker of another version) ends the task as a lost one.
    except (ray.exceptions.RayError, ValueError) as exc:
        text = str(exc).strip().splitlines()
        outcome.append(text[0][:200] if text else type(exc).__name__)
