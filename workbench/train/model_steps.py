"""The model steps of a training run: speculators' data preparation, the target's hidden states,
training in a subprocess, the best checkpoint and its registration."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable

from workbench import events, paths
from workbench.host import process
from workbench.train.config import Cancelled, TrainError
from workbench.train.records import _cached_matches, _load_dataset, _metric_event, _speculators, best_checkpoint, loss_of
from workbench.train.speculators_cpu import EVENT_PREFIX


class ModelSteps:
    """Steps 3 to 7 of the pipeline (a mixin of `Pipeline`)."""

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
        # Deferred: torch, safetensors and transformers take seconds to import and only this step needs them
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
                self.emit(events.Progress(step="hidden_states", done=i + 1, total=len(ds)))
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
        # Deferred: plan pulls in the checkpoints and load packages (aiohttp), which only registering the pair needs
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
                if line.startswith(EVENT_PREFIX) and on_metrics:
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
