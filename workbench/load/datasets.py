"""The task-grounded benchmarks (GSM8K, MATH500, HumanEval, MBPP) as workloads: files fetched
once through huggingface_hub into the shared Hugging Face cache, read with pyarrow or json, and
posed as chat prompts the way each benchmark is usually posed."""

from __future__ import annotations

from typing import Any
import os
from dataclasses import dataclass
from pathlib import Path

from workbench.load.prompts import Prompt, WorkloadError, read_rows


@dataclass(frozen=True)
class Dataset:
    name: str
    repo: str
    files: str          # the file pattern in the dataset repo holding the split we use
    family: str         # the built-in family it corresponds to
    template: str       # how each row becomes the user message
    fields: tuple[str, ...]  # published columns the template needs

    def prompt(self, row: dict[str, Any], index: int) -> Prompt:
        missing = [f for f in self.fields if f not in row]
        if missing:
            raise WorkloadError(f"{self.name}: row {index + 1} lacks the published column {missing[0]!r}")
        values = dict(row)
        if "test_list" in values:
            values["tests"] = "\n".join(values["test_list"])
        ident = row.get("task_id") or row.get("unique_id") or index
        return Prompt(f"{self.name}-{ident}", self.family, self.template.format(**values), reference(row))


DATASETS = {d.name: d for d in (
    Dataset("gsm8k", "openai/gsm8k", "main/test-*.parquet", "math_word",
            "{question}\nSolve the problem step by step, then give the final answer after '####'.",
            ("question",)),
    Dataset("math500", "HuggingFaceH4/MATH-500", "test.jsonl", "competition_math",
            "{problem}\nPlease reason step by step, and put your final answer within \\boxed{{}}.",
            ("problem",)),
    Dataset("humaneval", "openai/openai_humaneval", "openai_humaneval/test-*.parquet", "function_completion",
            "Complete the following Python function. Reply with the whole function in one code block.\n"
            "```python\n{prompt}```", ("prompt",)),
    Dataset("mbpp", "google-research-datasets/mbpp", "full/test-*.parquet", "programming_task",
            "You are an expert Python programmer, and here is your task: {text} "
            "Your code should pass these tests:\n\n{tests}", ("text", "test_list")),
)}


def reference(row: dict[str, Any]) -> str | None:
    """The row's own answer: GSM8K's `answer` ends in '#### NUMBER' after its worked solution;
    MATH500's `answer` is the final answer alone. HumanEval and MBPP have none to grade against."""
    answer = row.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        return None
    return answer.rpartition("####")[2].strip() if "####" in answer else answer.strip()


def get(name: str) -> Dataset:
    if name not in DATASETS:
        raise WorkloadError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return DATASETS[name]


def from_rows(dataset: Dataset, rows: list[dict[str, Any]]) -> list[Prompt]:
    if not rows:
        raise WorkloadError(f"{dataset.name}: the file holds no rows")
    return [dataset.prompt(row, i) for i, row in enumerate(rows)]


def from_file(dataset: Dataset, path: Path) -> list[Prompt]:
    """A local copy of the dataset's published file (parquet or JSON lines)."""
    return from_rows(dataset, read_rows(path))


def fetch(dataset: Dataset, offline: bool = False) -> list[Path]:
    """The dataset's files in the Hugging Face cache, downloaded the first time."""
    # Deferred: huggingface_hub is slow to import and only a benchmark not yet read needs it
    from huggingface_hub import snapshot_download
    from huggingface_hub import errors as hub_errors

    try:
        folder = snapshot_download(dataset.repo, repo_type="dataset", allow_patterns=[dataset.files],
                                   local_files_only=offline)
    except hub_errors.GatedRepoError:
        raise WorkloadError(f"{dataset.repo} is gated: accept its terms on its Hub page and set HF_TOKEN") from None
    except hub_errors.RepositoryNotFoundError:
        raise WorkloadError(f"{dataset.repo} was not found on the Hub (or needs a token)") from None
    except hub_errors.LocalEntryNotFoundError:
        raise WorkloadError(f"{dataset.repo} is not in the Hugging Face cache and the Hub cannot be reached "
                            "(offline): fetch it once while online, or pass a local file as "
                            f"{dataset.name}:PATH") from None
    except hub_errors.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise WorkloadError(f"could not fetch {dataset.repo}: the Hub answered HTTP {status}") from None
    except OSError as exc:
        # A full disk or a file-size limit while writing into the cache ends up here.
        raise WorkloadError(f"could not fetch {dataset.repo} into the Hugging Face cache: "
                            f"{exc.strerror or type(exc).__name__}") from None
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.match(dataset.files.split("/")[-1]))
    if not files:
        raise WorkloadError(f"{dataset.repo} holds no file matching {dataset.files}")
    return files


def load(spec: str, base: Path | None = None) -> list[Prompt]:
    """`gsm8k` (from the Hub or its cache) or `gsm8k:PATH` (a local copy in the published schema)."""
    name, _, path = spec.partition(":")
    dataset = get(name)
    if path:
        file = Path(path).expanduser()
        if not file.is_absolute() and base is not None:
            file = base / file
        if not file.is_file():
            raise WorkloadError(f"{dataset.name}: {path} is not a file")
        return from_file(dataset, file)

    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    prompts: list[Prompt] = []
    for file in fetch(dataset, offline):
        prompts += from_file(dataset, file)
    return prompts


def describe() -> list[dict[str, Any]]:
    return [{"name": d.name, "repo": d.repo, "family": d.family, "template": d.template} for d in DATASETS.values()]


