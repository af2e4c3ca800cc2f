"""The training `Pipeline`: a speculator's resumable steps (step objects: data_steps, model_steps)
run in order in one output folder, with the services they share (the manifest that records them,
cancel, the target's server, subprocesses) and the reuse of another folder's finished data steps."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO, TYPE_CHECKING

from workbench import events, paths
from workbench.host import process
from workbench.train.config import (DATA_FILES, DATA_KEYS, DATA_STEPS, MANIFEST, STEPS, Cancelled, TrainConfig,
                                    TrainError)
from workbench.train.context import Step
from workbench.train.data_steps import Prompts, Responses, start_server
from workbench.train.model_steps import Checkpoint, HiddenStates, Prepare, Register, Train
from workbench.train.records import _metric_event, folder_state
from workbench.train.speculators_cpu import EVENT_PREFIX

if TYPE_CHECKING:  # for annotations only: launch is imported when a server starts
    from workbench.launch import LocalServer

# The steps in order; each is an object with a name and run(pipeline) -> the info recorded for it.
STEP_OBJECTS: tuple[Step, ...] = (Prompts(), Responses(), Prepare(), HiddenStates(), Train(), Checkpoint(), Register())
assert tuple(s.name for s in STEP_OBJECTS) == STEPS

__all__ = ["Pipeline"]


@dataclass
class Pipeline:
    config: TrainConfig
    emit: events.Emit = lambda e: None
    endpoint: str | None = None      # an already running server for the responses (no start)
    api_key: str | None = None       # that server's key, if it has one
    vllm_python: str | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    _proc: subprocess.Popen[str] | None = None
    _server: LocalServer | None = None  # the target's vLLM server, started once for prompts and responses
    server_log: TextIO | None = None

    # -- state ---------------------------------------------------------------------------------
    @property
    def out(self) -> Path:
        return Path(self.config.out)

    @property
    def target(self) -> str:
        # Deferred: plan pulls in the checkpoints and load packages (aiohttp), which only resolving the target needs
        from workbench import plan

        try:
            return plan.resolve_model(self.config.target, "target", Path.cwd())
        except plan.PlanError as exc:
            raise TrainError(str(exc)) from None

    def manifest(self) -> dict[str, Any]:
        path = self.out / MANIFEST
        if not path.exists():
            return {"config": self.config.key(), "done": {}}
        try:
            return json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise TrainError(f"cannot read {path}: {exc}") from None

    def _save_manifest(self, m: dict[str, Any]) -> None:
        paths.write_atomic(self.out / MANIFEST, json.dumps(m, indent=2))

    def _mark_done(self, step: str, info: dict[str, Any]) -> None:
        m = self.manifest()
        m["done"][step] = {**info, "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self._save_manifest(m)

    def cancel(self) -> None:
        self.cancel_event.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            process.signal_group(proc.pid, signal.SIGINT)

    def check(self) -> None:
        """Raises Cancelled once cancel() was called: steps call it between units of work."""
        if self.cancel_event.is_set():
            raise Cancelled()

    def server_endpoint(self) -> tuple[str, str | None]:
        """The given server, or one started here (once) for the target."""
        if self.endpoint:
            return self.endpoint, self.api_key
        if self._server is None:
            self._server = start_server(self)
        return self._server.spec.base_url, self._server.api_key

    def _stop_server(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
            if self.server_log is not None:  # opened with the server
                self.server_log.close()

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.target  # a bad target is reported before anything is written
        self.out.mkdir(parents=True, exist_ok=True)
        m = self.manifest()
        if m["done"] and m.get("config") != self.config.key():
            raise TrainError(f"{self.out} holds a training run with another configuration; "
                             "choose another --out (or delete the folder)")
        # Nothing finished yet (a new folder, or a first attempt that failed): these settings apply.
        reuse = self._reuse_source(Path(self.config.reuse)) if self.config.reuse and not m["done"] else None
        m["config"] = self.config.key()
        self._save_manifest(m)
        if reuse:
            self._reuse(*reuse)
        try:
            for obj in STEP_OBJECTS:
                step = obj.name
                self.check()
                done = self.manifest()["done"]
                if step in done and not (step == "train" and self._more_training(done["train"])):
                    self.emit(events.StepSkipped(step=step))
                    continue
                self.emit(events.StepStarted(step=step))
                t0 = time.monotonic()
                info = obj.run(self)
                info["seconds"] = round(time.monotonic() - t0, 1)
                self._mark_done(step, info)
                self.emit(events.StepFinished(step=step, info=info))
                if step == "responses":
                    self._stop_server()  # the target's server is not needed past this step
        finally:
            self._stop_server()
        done = self.manifest()["done"]
        summary = events.Done(out=str(self.out), checkpoint=done["checkpoint"]["path"],
                              pair=done["register"]["pair"], plan=done["register"]["plan"])
        self.emit(summary)
        return summary.to_json()

    def _more_training(self, info: dict[str, Any]) -> bool:
        return info.get("epochs", 0) < self.config.epochs and self.config.max_steps is None

    def _reuse_source(self, source: Path) -> tuple[Path, dict[str, Any], list[str]]:
        """Checks that another folder's data can stand in for this run's: the settings that shape
        the data must be equal (the draft's kind, vocabulary and learning rate may differ)."""
        src = folder_state(source)
        if src.get("error"):
            raise TrainError(src["error"])
        if not src["config"]:
            raise TrainError(f"{source} holds no training run to reuse")
        mine, theirs = self.config.key(), src["config"]
        differ = [k for k in DATA_KEYS if mine.get(k) != theirs.get(k)]
        # Layers: default (None) takes whatever the source extracted; explicit ones must match it.
        extracted = src["done"].get("hidden_states", {}).get("layer_ids") or theirs.get("layer_ids")
        if self.config.layer_ids and list(self.config.layer_ids) != list(extracted or []):
            differ.append("layer_ids")
        if differ:
            raise TrainError(f"{source} was made with other data settings ({', '.join(differ)} differ); "
                             "reuse needs the same target, prompts, lengths and layers")
        steps = [s for s in DATA_STEPS if s in src["done"]]
        if not steps:
            raise TrainError(f"{source} has no finished data step to reuse")
        return source, src, steps

    def _reuse(self, source: Path, src: dict[str, Any], steps: list[str]) -> None:
        """Takes the finished data steps of another folder: files are hard-linked where the file
        system allows (no copy of the hidden states), else copied; the data folder is assembled
        under a temporary name, so an interrupted reuse is redone, never half-used."""
        def link(a: str, b: str) -> None:
            try:
                os.link(a, b)
            except OSError:
                shutil.copy2(a, b)

        for name in DATA_FILES:
            if (source / name).exists() and not (self.out / name).exists():
                # The partial file is appended to by a resumed responses step: a copy, never a link.
                (shutil.copy2 if name.endswith(".partial.jsonl") else link)(str(source / name), str(self.out / name))
        if "prepare" in steps and not (self.out / "data").exists():
            tmp = self.out / "data.reuse-tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(source / "data", tmp, copy_function=link)
            os.replace(tmp, self.out / "data")
        m = self.manifest()
        for step in steps:
            m["done"][step] = {**src["done"][step], "reused_from": str(source.resolve())}
        self._save_manifest(m)
        self.emit(events.Reused(source=str(source.resolve()), steps=steps))

    # -- steps ---------------------------------------------------------------------------------

    # -- services the steps share ---------------------------------------------------------------
    def run_subprocess(self, argv: list[str], step: str, on_metrics: Callable[[dict[str, Any]], None] | None = None) -> None:
        log = open(self.out / f"{step}.log", "a", encoding="utf-8", buffering=1)
        metrics = open(self.out / "train-metrics.jsonl", "a", encoding="utf-8", buffering=1) if on_metrics else None
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                          env.get("PYTHONPATH")]))
        self._proc = process.start(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   errors="replace", bufsize=1, env=env, stdin=subprocess.DEVNULL, cwd=self.out)
        tail: list[str] = []
        try:
            assert self._proc.stdout
            for line in self._proc.stdout:
                if line.startswith(EVENT_PREFIX) and on_metrics and metrics is not None:
                    record = json.loads(line[len(EVENT_PREFIX):])
                    metrics.write(json.dumps(record) + "\n")
                    on_metrics(record)
                    event = _metric_event(record)
                    if event is not None:
                        self.emit(event)
                    continue
                log.write(line)
                tail = (tail + [line.rstrip()])[-30:]
            rc = self._proc.wait()
        finally:
            if self._proc.poll() is None:
                process.stop_group(self._proc, grace_s=0, sig=signal.SIGKILL)
            self._proc = None
            log.close()
            if metrics:
                metrics.close()
        if self.cancel_event.is_set():
            raise Cancelled()
        if rc != 0:
            reason = next((t for t in reversed(tail) if re.search(r"Error|error:", t)), tail[-1] if tail else "")
            raise TrainError(f"{step} failed (exit {rc}): {reason.strip()[:300]} (log: {self.out / (step + '.log')})")
