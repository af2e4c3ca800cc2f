"""One server configuration's runs on one GPU slot: start the server pinned to the slot, measure
each run against it, stop it. A job never reads the database and writes only through its sender
(workbench.sweep.outbox), so the same job runs in a thread of the runner or on a Ray worker.

A failing server fails only this job's runs. A cancelled job (Stop, an interrupt) records no
failure: its runs stay pending or running, and the runner marks the one in flight cancelled.
"""

from __future__ import annotations

from typing import Any
import asyncio
import os
import queue
import time
from dataclasses import dataclass, field, replace

from workbench import events, launch
from workbench.analysis import alarms, repeats
from workbench.host import engine, process
from workbench.host.slots import Slot
from workbench.launch import provenance
from workbench.load import pool, workloads
from workbench.metrics import telemetry
from workbench.plan import AutoRepeats, Run, Server
from workbench.plan.profiles import Profile
from workbench.sweep import app_cpu
from workbench.sweep.measure import Measurement, RunFailed
from workbench.sweep.outbox import Sender
from workbench.sweep.window import model_runner

HEARTBEAT_S = 5.0


@dataclass
class Context:
    """What every job of a sweep shares; plain data, so a Ray worker can be handed it."""
    vllm: engine.VllmInstall
    host_platform: str
    environment: dict[str, Any]
    sweep_id: int
    health_timeout_s: float
    scrape_interval_s: float
    prompts: dict[str, list[workloads.Prompt]] = field(default_factory=dict)
    app: app_cpu.Watched | None = None  # the desktop app that started the sweep, whose CPU each window reads
    # `repeats = "auto"`: a configuration's later repeats are skipped once its interval is narrow.
    auto_repeats: AutoRepeats | None = None
    # The vLLM each server runs, by server key (a docker server's is its image's), as probed before
    # the sweep: the argv's optional flags and the stored versions follow it.
    servings: launch.Servings = field(default_factory=dict)


@dataclass
class Work:
    """One server configuration and the runs to measure on it: their ids in the database, their
    stored warnings, and each run's place in the sweep (for "run 3 of 10")."""
    server: Server
    runs: list[Run]
    ids: dict[str, int]
    warnings: dict[int, list[str]]
    index: dict[str, int]
    total: int
    place: tuple[int, int] = (0, 0)  # the k-th of n server configurations the sweep starts

    @property
    def run_ids(self) -> list[int]:
        return [self.ids[r.key] for r in self.runs]


def _configuration(r: Run) -> tuple[Any, ...]:
    """What a run measures on its server, everything but the repeat: its repeats share it."""
    return (r.workload, r.concurrency, r.request_rate, r.num_prompts, r.max_tokens, r.temperature, r.top_p,
            r.ignore_eos)


class ServerJob:
    """One server's job; the measuring is the `Measurement` it makes once its server answers."""

    def __init__(self, ctx: Context, work: Work, slot: Slot, sender: Sender):
        self.ctx = ctx
        self.work = work
        self.slot = slot
        self.record = sender.record
        self.emit = sender.emit
        self.sweep_id = ctx.sweep_id
        self.readings: dict[int, list[telemetry.Reading]] = {}
        self.settled: set[int] = set()
        self.last_tok_s: float | None = None  # the last completed run's output tok/s
        self.log_queue: queue.Queue[tuple[float, str, str]] = queue.Queue()  # (time, stream, line)
        self.log_run_id: int | None = None
        self.sampler: telemetry.Sampler | None = None
        self.srv: launch.LocalServer | launch.AttachedServer | None = None
        self.measurement: Measurement | None = None
        self.cancelled = False
        self._last_beat = 0.0

    # --- housekeeping while it runs ---------------------------------------------------------------
    def _tick(self) -> bool:
        """Called while waiting on the server: keeps the heartbeat fresh; True once cancelled."""
        now = time.time()
        if now - self._last_beat > HEARTBEAT_S:
            self._last_beat = now
            self._flush()
            self.record.heartbeat(self.sweep_id, now)
        return self.cancelled

    def _on_line(self, stream: str, line: str) -> None:
        self.log_queue.put((time.time(), stream, line))

    def _flush(self) -> None:
        self._flush_logs()
        self._flush_telemetry()

    def _flush_logs(self) -> None:
        rows = []
        while True:
            try:
                rows.append(self.log_queue.get_nowait())
            except queue.Empty:
                break
        if rows and self.log_run_id is not None:
            self.record.log_lines(self.log_run_id, rows)

    def _flush_telemetry(self) -> None:
        if self.sampler is None or self.log_run_id is None:
            return
        readings = self.sampler.drain()
        if readings:
            # Kept here too: a run's energy is computed from its own readings, without a read.
            self.readings.setdefault(self.log_run_id, []).extend(readings)
            self.record.telemetry([x.row(self.log_run_id) for x in readings])

    def _start_telemetry(self, profile: Profile) -> None:
        """GPU readings of this slot's GPUs only where the server runs on this host; an attached
        server elsewhere gets none (this host's GPUs say nothing about it)."""
        local = profile.kind != "attach" or launch.is_loopback(profile.base_url)
        platform = profile.gpu_platform(self.ctx.host_platform) if local else "none"
        gpus = profile.gpus if self.slot.gpus is None or self.slot.logical else self.slot.gpus
        sources, what = telemetry.sources_for(platform, gpus, host=local)
        self.sampler = telemetry.Sampler(sources).start() if sources else None
        self.telemetry_what = what or "none"

    def _stop_telemetry(self) -> None:
        if self.sampler:
            self.sampler.stop()
            self._flush_telemetry()
            self.sampler = None

    def _fail(self, run_id: int, error: str, log_tail: str) -> None:
        if self.cancelled:
            return
        self._flush()
        self.settled.add(run_id)
        self.record.run_failed(run_id, error, log_tail)
        self.emit(events.RunFailed(run=run_id, error=error))

    def stop(self) -> None:
        """From another thread (Stop): the job ends as soon as its server is gone."""
        self.cancelled = True
        if self.srv is not None:
            self.srv.stop()

    # --- the job ----------------------------------------------------------------------------------
    def run(self) -> None:
        server = self.work.server
        self._start_telemetry(server.profile)
        try:
            self._serve(server)
        finally:
            self._stop_telemetry()
            self._flush_logs()

    def _provenance(self, server: Server, spec: launch.LaunchSpec, lines: list[str], served: str | None) -> dict[str, Any]:
        """This server's provenance. The host's part is asked only where the server runs on this
        host, and for the slot's own GPUs (a profile's `gpus` where no slot pins them)."""
        profile = server.profile
        local = profile.kind != "attach" or launch.is_loopback(profile.base_url)
        platform = profile.gpu_platform(self.ctx.host_platform) if local else "none"
        host = provenance.host_part(platform, self._pinned() or profile.gpus)
        return provenance.for_server(server, spec, self.ctx.vllm, host, lines, served,
                                     self.ctx.servings.get(server.key))

    def _pinned(self) -> tuple[int, ...] | None:
        return None if self.slot.gpus is None or self.slot.logical else self.slot.gpus

    def _serve(self, server: Server) -> None:
        todo, ids = self.work.runs, self.work.ids
        spec = launch.prepare(server, self.ctx.vllm, launch.free_port(), self.ctx.host_platform, gpus=self._pinned(),
                              servings=self.ctx.servings)
        key_env = server.profile.api_key_env
        srv: launch.LocalServer | launch.AttachedServer
        if spec.kind == "attach":
            srv = launch.AttachedServer(spec, api_key=os.environ.get(key_env) if key_env else None)
        else:
            srv = launch.LocalServer(spec, on_line=self._on_line)
        self.srv = srv
        self.log_run_id = ids[todo[0].key]
        self.record.server_command(self.work.run_ids, spec.command, spec.vllm_args)
        self.record.server_placement(self.work.run_ids, None if self.slot.gpus is None else list(self.slot.gpus),
                                     spec.env)
        self.emit(events.ServerStarting(run=self.log_run_id, command=spec.command, kind=spec.kind,
                                        index=self.work.place[0] or None, servers=self.work.place[1] or None,
                                        **self._slot_fields()))
        try:
            if spec.kind == "attach" and key_env and not srv.api_key:
                raise launch.LaunchError(f"the profile names {key_env} for the server's API key, "
                                         "but that variable is not set")
            # A SIGKILLed runner cannot stop its server; the kernel does it instead.
            srv.start(preexec=process.die_with_parent)
            seconds = srv.wait_healthy(self.ctx.health_timeout_s, cancelled=self._tick)
            if isinstance(srv, launch.AttachedServer) and server.served_name not in srv.served_models:
                raise launch.LaunchError(f"the attached server serves {', '.join(srv.served_models) or 'no model'}, "
                                         f"not {server.served_name!r}: set target.served_name to its name")
            self.emit(events.ServerReady(seconds=round(seconds, 1), port=spec.port,
                                         slot=self._slot_fields().get("slot")))
        except launch.LaunchError as exc:
            srv.stop()
            for r in todo:
                self._fail(ids[r.key], str(exc), exc.log_tail)
            return
        environment = {**self.ctx.environment, "telemetry": self.telemetry_what, "profile": server.profile.name,
                       "kind": spec.kind, "vllm_server": launch.server_version(spec.base_url),
                       **model_runner(list(srv.tail))}
        self.record.server_environment(self.work.run_ids, environment)
        self.record.server_provenance(self.work.run_ids, self._provenance(server, spec, list(srv.tail),
                                                                          environment["vllm_server"]))
        clients = pool.ClientPool(spec.base_url, srv.api_key, server.served_name,
                                  pool.processes_for(max(r.concurrency for r in todo)))
        self.measurement = Measurement(srv, clients, self.record, self.emit, sweep_id=self.sweep_id,
                                       scrape_interval_s=self.ctx.scrape_interval_s, app=self.ctx.app,
                                       prompts=self.ctx.prompts, warnings=self.work.warnings,
                                       before_sample=self._flush)
        measured: dict[tuple[Any, ...], list[float]] = {}  # a configuration's throughput, repeat by repeat
        gate = self.ctx.auto_repeats
        try:
            clients.start()
            for r in todo:
                if self.cancelled:
                    break
                config = _configuration(r)
                if gate and repeats.enough(measured.get(config, []), gate.target, gate.maximum):
                    self._skip(r, repeats.reason(measured[config], gate.target, gate.maximum))
                    continue
                ok = self._measure_one(r, srv)
                if ok and self.last_tok_s is not None:
                    measured.setdefault(config, []).append(self.last_tok_s)
                if self.cancelled:
                    break
                if not ok and not srv.alive:
                    for rest in todo[todo.index(r) + 1:]:
                        self._fail(ids[rest.key], "vLLM server died during an earlier run", srv.log_tail())
                    break
        except RuntimeError as exc:  # the load generator's processes could not start
            for r in todo:
                if ids[r.key] not in self.settled:
                    self._fail(ids[r.key], str(exc), "")
        finally:
            clients.close()
            srv.stop()
            self._flush_logs()

    def _skip(self, r: Run, reason: str) -> None:
        run_id = self.work.ids[r.key]
        self.settled.add(run_id)
        self.record.run_skipped(run_id, reason)
        self.emit(events.RunFinished(run=run_id, label=r.label, output_tok_s=None, mal=None, acceptance_rate=None))

    def _measure_one(self, r: Run, srv: launch.LocalServer | launch.AttachedServer) -> bool:
        """One run measured and recorded; False when it failed."""
        run_id = self.work.ids[r.key]
        self.log_run_id = run_id
        self.emit(events.RunStarted(run=run_id, label=r.label, index=self.work.index[r.key], total=self.work.total,
                                    **self._slot_fields()))
        self.record.run_started(run_id)
        self.last_tok_s = None
        assert self.measurement is not None  # made in _serve, before any run is measured
        try:
            measured = asyncio.run(self.measurement.measure(run_id, r))
        except RunFailed as exc:
            self._fail(run_id, str(exc), srv.log_tail())
            return False
        self._flush_telemetry()
        summary = replace(measured.summary, **self._energy(run_id, measured.span, measured.summary.output_tokens))
        if self.cancelled:
            return True
        self._flush_logs()
        self.settled.add(run_id)
        if measured.partial:
            self.record.run_partial(run_id, summary, measured.partial)
            self.emit(events.RunFailed(run=run_id, error=f"partial: {measured.partial}"))
        else:
            self.record.run_completed(run_id, summary)
            self.last_tok_s = summary.output_tok_s  # a partial run does not count toward auto repeats
        for alarm in alarms.decode(summary.alarms):
            self.emit(events.Alarm(run=run_id, kind=alarm["kind"], message=alarm["message"]))
        self.emit(events.RunFinished(run=run_id, label=r.label, output_tok_s=summary.output_tok_s,
                                     mal=summary.mal, acceptance_rate=summary.acceptance_rate))
        return True

    def _energy(self, run_id: int, span: tuple[float, float], output_tokens: int) -> dict[str, Any]:
        """The run's energy from this job's GPU readings over its window (a second either side:
        the sampler's readings are that far apart)."""
        t0, t1 = span
        readings = [x for x in self.readings.get(run_id, []) if t0 - 1.0 <= x.t <= t1 + 1.0]
        figures = telemetry.energy(readings, t0, t1)
        columns = figures.columns()
        if figures.energy_j is not None and output_tokens:
            columns["joules_per_token"] = figures.energy_j / output_tokens
        return columns

    def _slot_fields(self) -> dict[str, Any]:
        """The slot and its GPUs on the events of a parallel sweep (a serial one leaves them out)."""
        if self.slot.gpus is None:
            return {}
        return {"slot": self.slot.index, "gpus": list(self.slot.gpus)}
