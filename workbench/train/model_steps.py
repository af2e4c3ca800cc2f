"""The model steps of a training run, each an object the `Pipeline` runs: speculators' data preparation, the target's hidden states,
training in a subprocess, the best checkpoint and its registration."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from workbench import events, paths
from workbench.train.config import TrainError
from workbench.train.context import StepContext
from workbench.train.records import (
    _cached_matches,
    _load_dataset,
    _speculators,
    best_checkpoint,
    loss_of,
)


def layer_ids(chosen: list[int] | None, num_layers: int) -> list[int]:
    """The target layers whose outputs the draft reads: the chosen ones (1-based, checked), else
    an early, a middle and a late one, as EAGLE-3 does."""
    if chosen:
        bad = [i for i in chosen if not 1 <= i <= num_layers]
        if bad:
            raise TrainError(f"layer ids {bad} are outside the target's 1..{num_layers}")
        return list(chosen)
    return [2, num_layers // 2, num_layers - 3]


class Prepare:
    """Step 3: speculators' data preparation of the responses."""
    name = "prepare"

    def run(self, p: StepContext) -> dict[str, Any]:
        data = p.out / "data"
        argv = [_speculators(), "prepare-data", "--model", p.target, "--data", str(p.out / "responses.jsonl"),
                "--output", str(data), "--seq-length", str(p.config.seq_length), "--no-skip-token-freq",
                "--seed", str(p.config.seed), "--overwrite"]
        p.run_subprocess(argv, "prepare")
        ds = _load_dataset(data)
        return {"samples": len(ds), "tokens": int(sum(len(x) for x in ds["input_ids"]))}


class HiddenStates:
    """Step 4: the target's hidden states at the draft's layers, per sample."""
    name = "hidden_states"

    def run(self, p: StepContext) -> dict[str, Any]:
        """Per sample: the outputs of decoder layers k-1 for each id k, plus the last decoder
        layer's output (before the final norm), stacked as [seq, n_layers, H] — what vLLM's
        `extract_hidden_states` writes, obtained here with forward hooks, so it runs on CPU."""
        # Deferred: torch, safetensors and transformers take seconds to import and only this step needs them
        import torch
        from safetensors.torch import save_file
        from transformers import AutoModelForCausalLM

        ds = _load_dataset(p.out / "data")
        folder = p.out / "data" / "hidden_states"
        folder.mkdir(parents=True, exist_ok=True)
        # float32 on CPU: bf16 matmuls there are several times slower; the files are stored in bf16.
        on_cpu = not torch.accelerator.is_available()
        model = AutoModelForCausalLM.from_pretrained(p.target, dtype=torch.float32 if on_cpu else torch.bfloat16)
        if not on_cpu:
            model.to(torch.accelerator.current_accelerator())
        model.eval()
        layers = model.model.layers
        ids = layer_ids(p.config.layer_ids, len(layers)) + [len(layers)]
        captured: dict[int, torch.Tensor] = {}
        hooks = []
        for k in ids:
            def hook(_module: Any, _inputs: Any, output: Any, k: int = k) -> None:
                captured[k] = (output[0] if isinstance(output, tuple) else output).detach()
            hooks.append(layers[k - 1].register_forward_hook(hook))
        written = reused = 0
        try:
            for i in range(len(ds)):
                p.check()
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
                p.emit(events.Progress(step="hidden_states", done=i + 1, total=len(ds)))
        finally:
            for h in hooks:
                h.remove()
        return {"files": len(ds), "written": written, "reused": reused, "layer_ids": ids[:-1],
                "num_layers": len(layers)}


class Train:
    """Step 5: training with speculators, in a subprocess."""
    name = "train"

    def run(self, p: StepContext) -> dict[str, Any]:
        done = p.manifest()["done"]
        ids = done["hidden_states"]["layer_ids"]
        save = p.out / "checkpoints"
        argv = [sys.executable, "-m", "workbench.train.speculators_cpu",
                "--speculator-type", p.config.speculator_type, "--verifier-name-or-path", p.target,
                "--data-path", str(p.out / "data"), "--save-path", str(save),
                "--draft-vocab-size", str(p.config.draft_vocab_size),
                "--target-layer-ids", *map(str, ids), "--total-seq-len", str(p.config.seq_length),
                "--epochs", str(p.config.epochs), "--lr", str(p.config.lr), "--seed", str(p.config.seed),
                "--draft-attn-impl", "sdpa", "--loss-implementation", "eager", "--num-workers", "0",
                "--logger", "", "--save-best"]
        if p.config.max_steps:
            argv += ["--max-steps", str(p.config.max_steps)]
        if p.config.speculator_type == "dflash":
            # bf16 autocast hits a dtype mismatch in DFlash on CPU; two layers keep a step affordable.
            argv += ["--hidden-states-dtype", "float32", "--num-layers", "2", "--max-anchors", "64"]
        history: list[dict[str, Any]] = []
        p.run_subprocess(argv, "train", on_metrics=history.append)
        train = [h for h in history if "train" in h]
        val = [h for h in history if "val" in h]
        info: dict[str, Any] = {"steps": len(train), "epochs": p.config.epochs}
        if train:
            info["last_loss"] = loss_of(train[-1]["train"])
        if val:
            info["val"] = val[-1]["val"]
            info["val_loss"] = loss_of(val[-1]["val"])
        if (p.out / "train-metrics.jsonl").exists():
            info["history"] = "train-metrics.jsonl"
        return info


class Checkpoint:
    """Step 6: the best checkpoint, with the verifier's path made absolute."""
    name = "checkpoint"

    def run(self, p: StepContext) -> dict[str, Any]:
        ckpt = best_checkpoint(p.out / "checkpoints")
        if ckpt is None:
            raise TrainError(f"training wrote no checkpoint under {p.out / 'checkpoints'}")
        cfg_path = ckpt / "config.json"
        cfg = json.loads(cfg_path.read_text())
        # vLLM reads the verifier from here; a relative path breaks `vllm serve`, so it is absolute.
        cfg["speculators_config"]["verifier"]["name_or_path"] = str(Path(p.target).resolve())
        paths.write_atomic(cfg_path, json.dumps(cfg, indent=2))
        return {"path": str(ckpt.resolve())}


class Register:
    """Step 7: the pair in the user catalog, and a plan that evaluates it."""
    name = "register"

    def run(self, p: StepContext) -> dict[str, Any]:
        # Deferred: plan pulls in the checkpoints and load packages (aiohttp), which only registering the pair needs
        from workbench.plan import catalog

        ckpt = p.manifest()["done"]["checkpoint"]["path"]
        name = p.config.name or f"trained-{p.config.speculator_type}-{p.out.name}"
        target = p.config.target
        block = p.config.speculator_type == "dflash"
        entry = {"name": name, "draft": ckpt, "target": target, "method": p.config.speculator_type,
                 "n": [3, 7] if block else [1, 2, 3], "draft_gated": False, "target_gated": False, "publisher": "trained here",
                 "source": str(p.out)}
        catalog.add_user_pair(entry)
        pair = catalog.get(name, catalog.load())
        plan_path = p.out / "evaluate.toml"
        paths.write_atomic(plan_path, catalog.plan_text(pair))
        return {"pair": name, "plan": str(plan_path)}
