"""Training a speculator (EAGLE-3) for a target, as resumable steps in one output folder.

prompts -> responses (the target's own, from a vLLM server started here) -> prepare (speculators
prepare-data) -> hidden states (transformers forward hooks, the file layout speculators reads) ->
train (speculators, in a subprocess) -> checkpoint (absolute verifier path) -> register (user
catalog pair and an evaluation plan).

`manifest.json` in the folder records the configuration and each finished step; a rerun skips the
finished steps, so a cancelled run resumes where it stopped. Every file is written under a
temporary name and renamed when complete, so a cancel never leaves a half-written file in use.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from workbench import paths

SELF_PROMPTS = "self"  # the prompt source "written by the target itself"
STEPS = ("prompts", "responses", "prepare", "hidden_states", "train", "checkpoint", "register")
MANIFEST = "manifest.json"

Emit = Callable[[dict], None]
CONCURRENCY = 8  # requests in flight while the target writes the responses


class TrainError(Exception):
    """A one-line reason the training pipeline cannot go on."""


class Cancelled(Exception):
    """The run was asked to stop; finished steps stay recorded."""


@dataclass
class TrainConfig:
    target: str                      # a model folder or demo:NAME
    out: str                         # the output folder (absolute)
    prompts: str = "self"            # a Draftbench workload name, a prompt file, or "self"
    num_prompts: int = 48
    max_tokens: int = 128
    seq_length: int = 512
    epochs: int = 3
    lr: float = 1e-3
    draft_vocab_size: int = 4096
    speculator_type: str = "eagle3"
    layer_ids: list[int] | None = None   # default: speculators' [2, L//2, L-3]
    max_steps: int | None = None
    seed: int = 0
    name: str | None = None          # the catalog pair's name
    reuse: str | None = None         # another training folder whose data (up to hidden states) to reuse

    def key(self) -> dict:
        # What changes the data or the model; `max_steps` and `epochs` may grow on a rerun.
        d = asdict(self)
        for k in ("out", "max_steps", "epochs", "name", "reuse"):
            d.pop(k)
        return d


# The steps whose output depends on the data settings only, not on the kind of draft: a DFlash
# draft can be trained on the very files an EAGLE-3 run extracted (hidden states are the costly part).
DATA_STEPS = ("prompts", "responses", "prepare", "hidden_states")
DATA_FILES = ("prompts.jsonl", "responses.jsonl", "responses.partial.jsonl")
DATA_KEYS = ("target", "prompts", "num_prompts", "max_tokens", "seq_length", "seed")


@dataclass
class Pipeline:
    config: TrainConfig
    emit: Emit = lambda e: None
    endpoint: str | None = None      # an already running server for the responses (no start)
    api_key: str | None = None       # that server's key, if it has one
    vllm_python: str | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    _proc: subprocess.Popen | None = None
    _server: object | None = None    # the target's vLLM server, started once for prompts and responses
    _server_log: object | None = None

    # -- state ---------------------------------------------------------------------------------
    @property
    def out(self) -> Path:
        return Path(self.config.out)

    @property
    def target(self) -> str:
        from workbench import plan

        try:
            return plan.resolve_model(self.config.target, "target", Path.cwd())
        except plan.PlanError as exc:
            raise TrainError(str(exc)) from None

    def manifest(self) -> dict:
        path = self.out / MANIFEST
        if not path.exists():
            return {"config": self.config.key(), "done": {}}
        try:
            return json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise TrainError(f"cannot read {path}: {exc}") from None

    def _save_manifest(self, m: dict) -> None:
        paths.write_atomic(self.out / MANIFEST, json.dumps(m, indent=2))

    def _mark_done(self, step: str, info: dict) -> None:
        m = self.manifest()
        m["done"][step] = {**info, "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self._save_manifest(m)

    def cancel(self) -> None:
        self.cancel_event.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    def _check(self) -> None:
        if self.cancel_event.is_set():
            raise Cancelled()

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> dict:
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
            for step in STEPS:
                self._check()
                done = self.manifest()["done"]
                if step in done and not (step == "train" and self._more_training(done["train"])):
                    self.emit({"event": "step_skipped", "step": step})
                    continue
                self.emit({"event": "step_started", "step": step})
                t0 = time.monotonic()
                info = getattr(self, "_" + step)()
                info["seconds"] = round(time.monotonic() - t0, 1)
                self._mark_done(step, info)
                self.emit({"event": "step_finished", "step": step, **info})
                if step == "responses":
                    self._stop_server()  # the target's server is not needed past this step
        finally:
            self._stop_server()
        done = self.manifest()["done"]
        summary = {"event": "done", "out": str(self.out), "checkpoint": done["checkpoint"]["path"],
                   "pair": done["register"]["pair"], "plan": done["register"]["plan"]}
        self.emit(summary)
        return summary

    def _more_training(self, info: dict) -> bool:
        return info.get("epochs", 0) < self.config.epochs and self.config.max_steps is None

    def _reuse_source(self, source: Path) -> tuple[Path, dict, list[str]]:
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

    def _reuse(self, source: Path, src: dict, steps: list[str]) -> None:
        """Takes the finished data steps of another folder: files are hard-linked where the file
        system allows (no copy of the hidden states), else copied; the data folder is assembled
        under a temporary name, so an interrupted reuse is redone, never half-used."""
        import shutil

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
        self.emit({"event": "reused", "source": str(source.resolve()), "steps": steps})

    # -- steps ---------------------------------------------------------------------------------
    def _prompts(self) -> dict:
        from workbench.load import workloads

        if self.config.prompts == SELF_PROMPTS:
            return self._self_prompts()
        try:
            prompts = workloads.load(self.config.prompts, Path.cwd())
        except workloads.WorkloadError as exc:
            raise TrainError(str(exc)) from None
        if not prompts:
            raise TrainError(f"the workload {self.config.prompts!r} has no prompts")
        chosen = workloads.sample(prompts, self.config.num_prompts, self.config.seed)
        # Cycling would repeat prompts when more are asked for than exist: keep each once.
        seen, rows = set(), []
        for p in chosen:
            if p.text in seen:
                continue
            seen.add(p.text)
            rows.append({"id": f"p{len(rows)}", "messages": [{"role": "user", "content": p.text}]})
        _write_jsonl(self.out / "prompts.jsonl", rows)
        return {"prompts": len(rows), "source": self.config.prompts}

    def _responses(self) -> dict:
        rows = [json.loads(line) for line in (self.out / "prompts.jsonl").read_text().splitlines() if line]
        partial = self.out / "responses.partial.jsonl"
        have = {r["id"]: r for r in _read_records(partial)}
        todo = [r for r in rows if r["id"] not in have]
        if todo and partial.exists():
            _cut_to_last_line(partial)  # so the next appended response starts on a line of its own
        if todo:
            base_url, api_key = self._endpoint()
            self._generate(base_url, api_key, todo, partial, len(have), len(rows))
        have = {r["id"]: r for r in _read_records(partial)}
        ordered = [have[r["id"]] for r in rows if r["id"] in have]
        _write_jsonl(self.out / "responses.jsonl", ordered)
        tokens = sum(sum(r["loss_mask"]) for r in ordered)
        return {"responses": len(ordered), "completion_tokens": tokens,
                "tokens": sum(len(r["input_ids"]) for r in ordered)}

    def _endpoint(self) -> tuple[str, str | None]:
        """The given server, or one started here (once) for the target."""
        if self.endpoint:
            return self.endpoint, self.api_key
        if self._server is None:
            self._server = self._start_server()
        return self._server.spec.base_url, self._server.api_key

    def _stop_server(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
            self._server_log.close()

    def _self_prompts(self) -> dict:
        """Prompts written by the target itself (the Magpie method): given only its chat template up
        to the start of a user turn, a chat model samples something a user might ask. For a target
        with no representative traffic at hand this gives on-distribution prompts, and it keeps
        Draftbench's own workloads unseen by the draft, so an evaluation on them is held out."""
        from concurrent.futures import ThreadPoolExecutor

        from transformers import AutoTokenizer

        marker = "\u2063DRAFTBENCH\u2063"
        try:
            tok = AutoTokenizer.from_pretrained(self.target)
            text = tok.apply_chat_template([{"role": "user", "content": marker}], tokenize=False)
        except Exception as exc:  # no tokenizer or no chat template: nothing to sample from
            raise TrainError(f"self-written prompts need the target's chat template: {exc}") from None
        prefix, _, suffix = text.partition(marker)
        stop = suffix.strip().split("\n")[0] or (tok.eos_token or "")
        if not prefix or not stop:
            raise TrainError("self-written prompts need a chat template with a user turn")
        # The turn ends with a special token, which vLLM leaves out of the text: stop on its id.
        stop_id = tok.convert_tokens_to_ids(stop) if stop in tok.all_special_tokens else None
        base_url, api_key = self._endpoint()
        want = self.config.num_prompts
        rows: list[dict] = []
        seen: set[str] = set()
        with _client(base_url, api_key) as client:
            model = _served_model(client, base_url)

            def one(i: int) -> str:
                if self.cancel_event.is_set():
                    return ""
                # The template already holds any BOS token: vLLM must not add a second one.
                body = {"model": model, "prompt": prefix, "max_tokens": 96, "temperature": 1.0, "top_p": 0.95,
                        "stop": [stop], "seed": self.config.seed * 1_000_003 + i, "add_special_tokens": False}
                if stop_id is not None:
                    body["stop_token_ids"] = [stop_id]
                r = _post(client, base_url, "/v1/completions", body)
                if r.status_code != 200:
                    raise TrainError(f"the target's server answered {r.status_code}: {r.text[:200]}")
                choice = r.json()["choices"][0]
                # A prompt cut by max_tokens is unfinished: it would teach the draft odd endings.
                return choice["text"].strip() if choice.get("finish_reason") == "stop" else ""

            attempt = 0
            # Not a `with` block: on a cancel the requests in flight are abandoned, not awaited.
            pool = ThreadPoolExecutor(CONCURRENCY)
            try:
                while len(rows) < want and attempt < 4 * want:
                    batch = range(attempt, attempt + min(4 * CONCURRENCY, 4 * want - attempt))
                    attempt = batch.stop
                    for text in pool.map(one, batch):
                        self._check()
                        if len(text) >= 12 and text not in seen and len(rows) < want:
                            seen.add(text)
                            rows.append({"id": f"p{len(rows)}", "messages": [{"role": "user", "content": text}]})
                    self.emit({"event": "progress", "step": "prompts", "done": len(rows), "total": want})
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        if not rows:
            raise TrainError("the target wrote no usable prompt (is it a chat model?)")
        _write_jsonl(self.out / "prompts.jsonl", rows)
        return {"prompts": len(rows), "source": f"written by the target ({attempt} samples)"}

    def _start_server(self):
        from workbench import launch, plan
        from workbench.host import engine

        install = engine.probe(self.vllm_python or sys.executable)
        if not install.found:
            raise TrainError(f"no vLLM in {install.python}: install Draftbench with the `cpu` or `gpu` extra")
        server = plan.Server(target=self.target, served_name="target", method="baseline", n=None, draft=None,
                             options=(), max_model_len=max(2048, self.config.seq_length), dtype="bfloat16",
                             extra_args=(), env=(), enforce_eager=True, per_request_metrics=False)
        log = open(self.out / "server.log", "a", encoding="utf-8", buffering=1)
        srv = launch.LocalServer(launch.prepare(server, install, launch.free_port()),
                                 on_line=lambda _stream, line: log.closed or log.write(line + "\n"))
        self._server_log = log
        self.emit({"event": "server_starting", "command": srv.spec.command})
        srv.start()
        try:
            srv.wait_healthy(600, cancelled=self.cancel_event.is_set)
        except launch.LaunchError as exc:
            srv.stop()
            log.close()
            if self.cancel_event.is_set():
                raise Cancelled() from None
            raise TrainError(str(exc)) from None
        return srv

    def _generate(self, base_url: str, api_key: str | None, todo: list[dict], partial: Path,
                  done: int, total: int) -> None:
        """Greedy responses by the target itself, with the exact token ids vLLM used (prompt
        tokens get loss mask 0, generated ones 1), as `speculators regenerate-responses` writes."""
        from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

        # Not a `with` block: on a cancel the requests in flight are abandoned, not awaited (the
        # server is stopped next, which ends them).
        pool = ThreadPoolExecutor(CONCURRENCY)
        with _client(base_url, api_key) as client, open(partial, "a", encoding="utf-8") as f:
            model = _served_model(client, base_url)

            def one(row: dict) -> dict:
                if self.cancel_event.is_set():
                    return {}
                body = {"model": model, "messages": row["messages"], "max_tokens": self.config.max_tokens,
                        "temperature": 0.0, "return_token_ids": True}
                r = _post(client, base_url, "/v1/chat/completions", body)
                if r.status_code != 200:
                    raise TrainError(f"the target's server answered {r.status_code}: {r.text[:200]}")
                data = r.json()
                choice = data["choices"][0]
                prompt_ids, completion_ids = data.get("prompt_token_ids"), choice.get("token_ids")
                if prompt_ids is None or completion_ids is None:
                    raise TrainError("the vLLM server returned no token ids (it needs `return_token_ids`, "
                                     "vLLM >= 0.10.2)")
                return {"id": row["id"],
                        "messages": row["messages"] + [{"role": "assistant",
                                                        "content": choice["message"]["content"] or ""}],
                        "input_ids": prompt_ids + completion_ids,
                        "loss_mask": [0] * len(prompt_ids) + [1] * len(completion_ids)}

            pending = {pool.submit(one, row) for row in todo}
            try:
                while pending:
                    finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        out = fut.result()
                        if not out:
                            continue
                        # One whole line per response, written here only: a cancel loses at most
                        # the requests in flight.
                        f.write(json.dumps(out) + "\n")
                        f.flush()
                        done += 1
                        self.emit({"event": "progress", "step": "responses", "done": done, "total": total})
                    self._check()
            finally:
                pool.shutdown(wait=False, cancel_futures=True)

    def _prepare(self) -> dict:
        data = self.out / "data"
        argv = [_speculators(), "prepare-data", "--model", self.target, "--data", str(self.out / "responses.jsonl"),
                "--output", str(data), "--seq-length", str(self.config.seq_length), "--no-skip-token-freq",
                "--seed", str(self.config.seed), "--overwrite"]
        self._subprocess(argv, "prepare")
        ds = _load_dataset(data)
        return {"samples": len(ds), "tokens": int(sum(len(x) for x in ds["input_ids"]))}

    def layer_ids(self, num_layers: int) -> list[int]:
        if self.config.layer_ids:
            bad = [i for i in self.config.layer_ids if not 1 <= i <= num_layers]
            if bad:
                raise TrainError(f"layer ids {bad} are outside the target's 1..{num_layers}")
            return list(self.config.layer_ids)
        return [2, num_layers // 2, num_layers - 3]

    def _hidden_states(self) -> dict:
        """Per sample: the outputs of decoder layers k-1 for each id k, plus the last decoder
        layer's output (before the final norm), stacked as [seq, n_layers, H] — what vLLM's
        `extract_hidden_states` writes, obtained here with forward hooks, so it runs on CPU."""
        import torch
        from safetensors.torch import save_file
        from transformers import AutoModelForCausalLM

        ds = _load_dataset(self.out / "data")
        folder = self.out / "data" / "hidden_states"
        folder.mkdir(parents=True, exist_ok=True)
        # float32 on CPU: bf16 matmuls there are several times slower; the files are stored in bf16.
        on_cpu = not torch.accelerator.is_available()
        model = AutoModelForCausalLM.from_pretrained(self.target, dtype=torch.float32 if on_cpu else torch.bfloat16)
        if not on_cpu:
            model.to(torch.accelerator.current_accelerator())
        model.eval()
        layers = model.model.layers
        ids = self.layer_ids(len(layers)) + [len(layers)]
        captured: dict[int, torch.Tensor] = {}
        hooks = []
        for k in ids:
            def hook(_module, _inputs, output, k=k):
                captured[k] = (output[0] if isinstance(output, tuple) else output).detach()
            hooks.append(layers[k - 1].register_forward_hook(hook))
        written = reused = 0
        try:
            for i in range(len(ds)):
                self._check()
                path = folder / f"hs_{i}.safetensors"
                token_ids = torch.as_tensor(ds[i]["input_ids"]).long()
                if path.exists() and _cached_matches(path, token_ids, len(ids)):
                    reused += 1
                else:
                    captured.clear()
                    with torch.no_grad():
                        model.model(input_ids=token_ids[None].to(model.device))  # no logits needed
                    hs = torch.stack([captured[k][0] for k in ids], dim=1).to("cpu", torch.bfloat16).contiguous()
                    tmp = path.with_suffix(".tmp")
                    save_file({"hidden_states": hs, "token_ids": token_ids}, str(tmp))
                    os.replace(tmp, path)
                    written += 1
                self.emit({"event": "progress", "step": "hidden_states", "done": i + 1, "total": len(ds)})
        finally:
            for h in hooks:
                h.remove()
        return {"files": len(ds), "written": written, "reused": reused, "layer_ids": ids[:-1],
                "num_layers": len(layers)}

    def _train(self) -> dict:
        done = self.manifest()["done"]
        ids = done["hidden_states"]["layer_ids"]
        save = self.out / "checkpoints"
        argv = [sys.executable, "-m", "workbench.train.speculators_cpu",
                "--speculator-type", self.config.speculator_type, "--verifier-name-or-path", self.target,
                "--data-path", str(self.out / "data"), "--save-path", str(save),
                "--draft-vocab-size", str(self.config.draft_vocab_size),
                "--target-layer-ids", *map(str, ids), "--total-seq-len", str(self.config.seq_length),
                "--epochs", str(self.config.epochs), "--lr", str(self.config.lr), "--seed", str(self.config.seed),
                "--draft-attn-impl", "sdpa", "--loss-implementation", "eager", "--num-workers", "0",
                "--logger", "", "--save-best"]
        if self.config.max_steps:
            argv += ["--max-steps", str(self.config.max_steps)]
        if self.config.speculator_type == "dflash":
            # bf16 autocast hits a dtype mismatch in DFlash on CPU; two layers keep a step affordable.
            argv += ["--hidden-states-dtype", "float32", "--num-layers", "2", "--max-anchors", "64"]
        history: list[dict] = []
        self._subprocess(argv, "train", on_metrics=history.append)
        train = [h for h in history if "train" in h]
        val = [h for h in history if "val" in h]
        info = {"steps": len(train), "epochs": self.config.epochs}
        if train:
            info["last_loss"] = loss_of(train[-1]["train"])
        if val:
            info["val"] = val[-1]["val"]
            info["val_loss"] = loss_of(val[-1]["val"])
        if (self.out / "train-metrics.jsonl").exists():
            info["history"] = "train-metrics.jsonl"
        return info

    def _checkpoint(self) -> dict:
        ckpt = best_checkpoint(self.out / "checkpoints")
        if ckpt is None:
            raise TrainError(f"training wrote no checkpoint under {self.out / 'checkpoints'}")
        cfg_path = ckpt / "config.json"
        cfg = json.loads(cfg_path.read_text())
        # vLLM reads the verifier from here; a relative path breaks `vllm serve`, so it is absolute.
        cfg["speculators_config"]["verifier"]["name_or_path"] = str(Path(self.target).resolve())
        paths.write_atomic(cfg_path, json.dumps(cfg, indent=2))
        return {"path": str(ckpt.resolve())}

    def _register(self) -> dict:
        from workbench.plan import catalog

        ckpt = self.manifest()["done"]["checkpoint"]["path"]
        name = self.config.name or f"trained-{self.config.speculator_type}-{self.out.name}"
        target = self.config.target
        block = self.config.speculator_type == "dflash"
        entry = {"name": name, "draft": ckpt, "target": target, "method": self.config.speculator_type,
                 "n": [3, 7] if block else [1, 2, 3], "draft_gated": False, "target_gated": False, "publisher": "trained here",
                 "source": str(self.out)}
        catalog.add_user_pair(entry)
        pair = catalog.get(name, catalog.load())
        plan_path = self.out / "evaluate.toml"
        paths.write_atomic(plan_path, catalog.plan_text(pair))
        return {"pair": name, "plan": str(plan_path)}

    # -- helpers -------------------------------------------------------------------------------
    def _subprocess(self, argv: list[str], step: str, on_metrics: Callable[[dict], None] | None = None) -> None:
        from workbench.train.speculators_cpu import EVENT_PREFIX

        log = open(self.out / f"{step}.log", "a", encoding="utf-8", buffering=1)
        metrics = open(self.out / "train-metrics.jsonl", "a", encoding="utf-8", buffering=1) if on_metrics else None
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                          env.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      errors="replace", bufsize=1, env=env, start_new_session=True,
                                      stdin=subprocess.DEVNULL, cwd=self.out)
        tail: list[str] = []
        try:
            assert self._proc.stdout
            for line in self._proc.stdout:
                if line.startswith(EVENT_PREFIX) and on_metrics:
                    record = json.loads(line[len(EVENT_PREFIX):])
                    metrics.write(json.dumps(record) + "\n")
                    on_metrics(record)
                    self.emit(_metric_event(record))
                    continue
                log.write(line)
                tail = (tail + [line.rstrip()])[-30:]
            rc = self._proc.wait()
        finally:
            if self._proc.poll() is None:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
            self._proc = None
            log.close()
            if metrics:
                metrics.close()
        if self.cancel_event.is_set():
            raise Cancelled()
        if rc != 0:
            reason = next((t for t in reversed(tail) if re.search(r"Error|error:", t)), tail[-1] if tail else "")
            raise TrainError(f"{step} failed (exit {rc}): {reason.strip()[:300]} (log: {self.out / (step + '.log')})")


def _client(base_url: str, api_key: str | None):
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=600)


def _post(client, base_url: str, path: str, body: dict):
    import httpx

    try:
        return client.post(path, json=body)
    except httpx.HTTPError as exc:
        raise TrainError(f"cannot reach the target's server at {base_url}: {exc}") from None


def _served_model(client, base_url: str) -> str:
    """The model id a vLLM server serves; a refused key or a foreign server is one line."""
    import httpx

    try:
        r = client.get("/v1/models")
    except httpx.HTTPError as exc:
        raise TrainError(f"cannot reach the target's server at {base_url}: {exc}") from None
    if r.status_code in (401, 403):
        raise TrainError(f"the server at {base_url} refused the API key (HTTP {r.status_code}); "
                         "pass its key with --api-key-env")
    try:
        return r.json()["data"][0]["id"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise TrainError(f"{base_url} is not an OpenAI-compatible vLLM server "
                         f"(GET /v1/models answered HTTP {r.status_code})") from None


def _metric_event(record: dict) -> dict:
    if "train" in record:
        return {"event": "train_step", "step": record.get("global_step"), "epoch": record.get("epoch"),
                "loss": loss_of(record["train"]), "metrics": record["train"]}
    if "val" in record:
        return {"event": "validation", "epoch": record.get("epoch"), "loss": loss_of(record["val"]),
                "metrics": record["val"]}
    return {"event": "metrics", **record}


def loss_of(metrics: dict) -> float | None:
    for key in ("loss", "loss_epoch"):
        if isinstance(metrics.get(key), (int, float)):
            return metrics[key]
    return None


def best_checkpoint(save: Path) -> Path | None:
    """`checkpoint_best` when training kept one, else the highest-numbered epoch folder."""
    if (save / "checkpoint_best" / "config.json").exists():
        return (save / "checkpoint_best").resolve()
    epochs = sorted((p for p in save.glob("*") if p.name.isdigit() and (p / "config.json").exists()),
                    key=lambda p: int(p.name))
    return epochs[-1] if epochs else None


def _cached_matches(path: Path, token_ids, n_layers: int) -> bool:
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as f:
            ids = f.get_tensor("token_ids")
            shape = f.get_slice("hidden_states").get_shape()
    except Exception:  # a damaged or foreign file is regenerated
        return False
    return ids.shape == token_ids.shape and bool((ids == token_ids).all()) and shape[1] == n_layers


def _load_dataset(folder: Path):
    from datasets import load_from_disk

    try:
        return load_from_disk(str(folder))
    except (OSError, FileNotFoundError, ValueError) as exc:
        raise TrainError(f"cannot read the prepared data in {folder}: {exc}") from None


def _speculators() -> str:
    exe = Path(sys.executable).with_name("speculators")
    if not exe.exists():
        raise TrainError("the `speculators` package is missing: install Draftbench with the `train` extra")
    return str(exe)


def _cut_to_last_line(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    paths.write_atomic(path, "".join(json.dumps(r) + "\n" for r in rows))


# -- reading a training folder (for the Train page and reports) ------------------------------------
_POSITION_KEY = re.compile(r"^(?:full_acc_(\d+)|position_(\d+)_acc)(?:_epoch)?$")


def position_accuracy(metrics: dict) -> list[float]:
    """Accuracy of the draft's k-th token (k = 1, 2, ...) from one speculators metric record.
    EAGLE-3 names them `full_acc_0..` (0-based; a position counts only when every earlier one
    was right too, as acceptance requires); DFlash `position_1_acc..` (1-based, each position on
    its own; its `eal` is the expected accepted length per block)."""
    found: dict[int, float] = {}
    for key, value in metrics.items():
        m = _POSITION_KEY.match(key)
        if m and isinstance(value, (int, float)):
            found[int(m.group(1)) + 1 if m.group(1) is not None else int(m.group(2))] = float(value)
    return [found[k] for k in sorted(found)]


def _read_records(path: Path) -> list[dict]:
    """The JSON lines of a file this pipeline appends to (none when it does not exist yet); a
    line cut by a cancel or a kill is skipped."""
    records = []
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


@dataclass
class LossCurve:
    """Training loss per step and validation loss after each epoch, in the order run (a resumed
    run's records follow the earlier ones), with the latest validation metrics."""
    train_loss: list[float] = field(default_factory=list)
    val_step: list[int] = field(default_factory=list)    # training steps run before each validation
    val_loss: list[float] = field(default_factory=list)
    last_val: dict | None = None

    def add(self, record: dict) -> None:
        """One speculators metric record: {"train": metrics} or {"val": metrics}."""
        if "train" in record:
            loss = loss_of(record["train"])
            if loss is not None:
                self.train_loss.append(loss)
        elif "val" in record:
            loss = loss_of(record["val"])
            if loss is not None:
                self.val_step.append(len(self.train_loss))
                self.val_loss.append(loss)
                self.last_val = record["val"]

    @classmethod
    def read(cls, out: Path) -> "LossCurve":
        """The curve of every training attempt in `out`."""
        curve = cls()
        for record in _read_records(Path(out) / "train-metrics.jsonl"):
            curve.add(record)
        return curve


def folder_state(out: Path) -> dict:
    """What an output folder holds: its configuration and finished steps (empty when new), and
    whether the next start resumes. A damaged manifest is reported, not raised."""
    path = Path(out) / MANIFEST
    if not path.exists():
        return {"config": None, "done": {}, "resumable": False}
    try:
        m = json.loads(path.read_text())
        done = dict(m.get("done", {}))
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        return {"config": None, "done": {}, "resumable": False, "error": f"cannot read {path}: {exc}"}
    return {"config": m.get("config"), "done": done, "resumable": 0 < len(done) < len(STEPS)}
