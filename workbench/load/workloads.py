"""Workloads: prompt sets turned into chat requests (the built-in set, or a JSONL/parquet file)."""

from __future__ import annotations

from typing import Any
import random
from pathlib import Path

from workbench import paths
from workbench.load import datasets
# Prompt, WorkloadError and read_rows live in prompts (datasets needs them too); callers use them from here.
from workbench.load.prompts import Prompt, WorkloadError, read_jsonl, read_rows

BUILTIN = "builtin"
FAMILIES = {
    "math_word": "GSM8K-like math word problems",
    "competition_math": "MATH500-like competition math",
    "function_completion": "HumanEval-like function completion",
    "programming_task": "MBPP-like short programming tasks",
}
PROMPT_COLUMNS = ("prompt", "question", "text", "problem")


RANDOM = "random"
# A fixed word list: random-word prompts stand in for `vllm bench serve`'s random-token datasets.
_WORDS = ("alpha bravo cobalt delta ember falcon garnet harbor indigo jasper kernel lumen matrix nectar "
          "onyx prism quartz raven sierra tundra umber vector willow xenon yonder zephyr").split()


def random_prompts(count: int = 64, words: int = 48, seed: int = 0) -> list[Prompt]:
    rng = random.Random(seed)
    return [Prompt(f"random-{i}", "random", " ".join(rng.choice(_WORDS) for _ in range(words)))
            for i in range(count)]


def template(name: str) -> str:
    """How the workload's rows become user messages (stored with every run)."""
    key = name.partition(":")[0]
    if key in datasets.DATASETS:
        return datasets.DATASETS[key].template
    if key == RANDOM:
        return "random words from a fixed list of 26 (no task: acceptance is not representative)"
    if key == BUILTIN:
        return "{prompt} (the built-in prompt as written)"
    return "{prompt} (the file's prompt column as written)"


def builtin_path() -> Path:
    return paths.resources_dir() / "prompts" / "builtin.jsonl"


def _from_rows(rows: list[dict[str, Any]], source: str, family: str) -> list[Prompt]:
    if not rows:
        raise WorkloadError(f"{source} holds no prompts")
    column = next((c for c in PROMPT_COLUMNS if c in rows[0]), None)
    if column is None:
        raise WorkloadError(f"{source} has no prompt column (looked for {', '.join(PROMPT_COLUMNS)})")
    prompts = []
    for i, row in enumerate(rows):
        text = row.get(column)
        if not isinstance(text, str) or not text.strip():
            raise WorkloadError(f"{source} row {i + 1} has an empty or non-text {column!r}")
        answer = row.get("answer")
        prompts.append(Prompt(str(row.get("id", i)), str(row.get("family", family)), text,
                              str(answer) if isinstance(answer, (str, int, float)) else None))
    return prompts


def _file(name: str, base: Path | None) -> Path:
    path = Path(name).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    return path


def load(name: str, base: Path | None = None) -> list[Prompt]:
    """`builtin`, `builtin:FAMILY`, a benchmark (`gsm8k`, `math500`, `humaneval`, `mbpp`, or
    `NAME:PATH` for a local copy), or a .jsonl/.parquet file with a prompt column."""
    if name.partition(":")[0] in datasets.DATASETS:
        return datasets.load(name, base)
    if name == RANDOM:
        return random_prompts()
    if name == BUILTIN or name.startswith(BUILTIN + ":"):
        prompts = _from_rows(read_jsonl(builtin_path()), "the built-in set", "")
        if ":" in name:
            family = name.split(":", 1)[1]
            if family not in FAMILIES:
                raise WorkloadError(f"unknown built-in family {family!r}; choose one of {', '.join(FAMILIES)}")
            prompts = [p for p in prompts if p.family == family]
        return prompts
    path = _file(name, base)
    if not path.is_file():
        raise WorkloadError(f"workload {name!r} is neither `builtin[:family]`, a benchmark "
                            "(gsm8k, math500, humaneval, mbpp) nor an existing file")
    return _from_rows(read_rows(path), path.name, path.stem)


def resolve(name: str, base: Path | None) -> str:
    """The workload name with any relative file path made absolute, so runs find it from anywhere."""
    key, sep, rest = name.partition(":")
    if name == BUILTIN or key == BUILTIN or name == RANDOM or name in datasets.DATASETS:
        return name
    if key in datasets.DATASETS:
        return f"{key}:{_file(rest, base).resolve()}"
    return str(_file(name, base).resolve())


def check(name: str, base: Path | None = None) -> None:
    """Validate a workload name (WorkloadError says what is wrong)."""
    if name in datasets.DATASETS or name == RANDOM:
        return  # benchmarks are fetched from the Hub (or its cache) when the run starts
    load(name, base)


def sample(prompts: list[Prompt], count: int, seed: int = 0) -> list[Prompt]:
    """`count` prompts: the set interleaved across families (so a short run still covers all of
    them), cycled when more are asked for than exist. Deterministic for a given seed."""
    by_family: dict[str, list[Prompt]] = {}
    for p in prompts:
        by_family.setdefault(p.family, []).append(p)
    rng = random.Random(seed)
    for group in by_family.values():
        rng.shuffle(group)
    order = [g[i] for i in range(max(len(g) for g in by_family.values())) for g in by_family.values() if i < len(g)]
    return [order[i % len(order)] for i in range(count)]
