"""Every plan key, declared once: its table, name, kind of value (type and range), default, help,
and where else it shows (the Experiment form's label, the plans `draftbench new` writes).

The loader reads each key through its declaration, the Experiment form takes its fields' ranges,
tooltips and defaults from it, and docs/plan-keys.md is generated from it
(`workbench.plan.keys_doc`): a key added here is read, checked, shown and documented with no other
change. What ties keys together (a relaunch needs servers Draftbench starts, max tokens must leave
room in max_model_len) stays the loader's. The launch profile's own keys are the profile's
(`workbench.plan.profiles`)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from workbench.plan.fields import PlanError
from workbench.plan.kinds import (
    Args, Choice, Env, Flag, Kind, Model, NameOrTable, Number, Parallel, Prompts, Repeats, Table, Text, Texts, Whole, Wholes)
from workbench.plan.model import MODES


@dataclass(frozen=True)
class Key:
    table: str  # "" for the top level; "methods" for a key of each [[methods]] entry
    name: str
    kind: Kind
    help: str
    # What a plan that leaves the key out gets (None: nothing). For a required key, what the form
    # shows and `draftbench new` writes, since the loader never assumes it.
    default: object = None
    default_says: str | None = None  # the default in words where the loader works it out
    required: str | None = None  # the refusal of a plan that leaves the key out
    label: str | None = None  # the Experiment form's label for it; None: not shown there (kept as written)
    new: bool = False  # written into the plans `draftbench new` makes

    @property
    def path(self) -> tuple[str, ...]:
        return (self.table, self.name) if self.table else (self.name,)

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


# The tables, in the order the docs list them, with what each holds.
TABLES = {"": "the experiment's name and launch profile", "target": "the model served",
          "server": "how each server is started and waited for",
          "sweep": "what is run, and in which order", "workload": "what each run sends",
          "methods": "one drafting method and its N values, each entry"}

KEYS: tuple[Key, ...] = (
    Key("", "name", Text(), "The experiment's name, shown with its runs", default_says="the file's name",
        label="Name"),
    Key("", "profile", NameOrTable(), "The launch profile: a saved profile's name, or a [profile] table "
        "(local, docker or attached; tensor parallelism, GPUs, ROCm settings)",
        default_says='the saved profile "default" where there is one, else local'),
    Key("target", "model", Model(), "The model being served: a folder, a Hugging Face repo id, or demo:smollm2-135m",
        required="the plan needs a [target] table with `model = ...`", label="Target"),
    Key("target", "served_name", Text(), "The name the server answers to", default_says="the model's folder name",
        label="Served name"),
    Key("target", "max_model_len", Whole(lo=64, hi=10_000_000), "vLLM's --max-model-len: prompt and answer "
        "together", 2048, label="Max model length", new=True),
    Key("target", "dtype", Text(), "vLLM's --dtype (auto, bfloat16, float16, float32)", "auto",
        default_says='"auto"; the demo target: float32 or bf16, whichever is faster on this CPU',
        label="dtype", new=True),
    Key("target", "extra_args", Args(), "More `vllm serve` arguments (not the speculative config, "
        "host, port or API key)", []),
    Key("target", "enforce_eager", Flag(), "Skip graph compilation: a faster start, slower steps", False,
        label="enforce eager (skip graph compilation; faster start)"),
    Key("server", "env", Env(), "Environment variables of every server", {}),
    Key("server", "health_timeout_s", Number(lo=5, hi=7200), "Seconds a server may take to answer its health "
        "check", 600),
    Key("server", "per_request_metrics", Flag(), "Ask vLLM for each request's own speculative-decoding figures",
        True),
    Key("sweep", "mode", Choice(values=MODES), 'exhaustive: every N; adaptive: run N_max and the smallest N, '
        'predict the best N, confirm it; what-if: dummy weights and imposed acceptance', "exhaustive"),
    Key("sweep", "relaunch", Flag(), "Each repeat on a server of its own: launch-to-launch drift enters the "
        "interval", False),
    Key("sweep", "parallel", Parallel(), 'Servers at once: a number, or "auto" (as many as the GPU slots allow)',
        default_says='one, or "auto" over the GPUs named on the command line'),
    Key("sweep", "baseline", Flag(), "Measure the baseline (no speculation); false leaves it out when it is "
        "already measured", True),
    Key("sweep", "baseline_retries", Whole(lo=0, hi=5), "Times a failed baseline run is tried again before any "
        "speculative run", 1),
    Key("sweep", "without_baseline", Choice(values=("skip", "run")), "A baseline that still failed: speculative "
        "runs wait for a sweep with one (skip), or are measured anyway (run)", "skip"),
    Key("workload", "names", Texts(), "Prompt sets: builtin[:family], random, gsm8k, math500, humaneval, mbpp "
        "(NAME:PATH for a local copy), or a .jsonl/.parquet file with a prompt column", ["builtin"],
        label="Prompt sets", new=True),
    Key("workload", "num_prompts", Prompts(), "Prompts per run, or {per_concurrency = K, min = M}: "
        "max(M, K x concurrency) at each concurrency", 16, label="Prompts per run", new=True),
    Key("workload", "max_tokens", Whole(lo=1, hi=1_000_000), "Maximum output tokens per request", 128,
        label="Max tokens", new=True),
    Key("workload", "concurrency", Wholes(lo=1, hi=4096), "Requests in flight at once; one run per value, "
        "e.g. 1, 4", [1], label="Concurrency", new=True),
    Key("workload", "request_rate", Number(lo=0.01, hi=100000), "Requests started per second instead of a fixed "
        "number in flight", default_says="none: a fixed concurrency"),
    Key("workload", "repeats", Repeats(), 'Repeats of every run, for a mean and a confidence interval; "auto": '
        "until the 95 % interval of its throughput is within repeats_target, at most repeats_max times", 1,
        label="Repeats", new=True),
    Key("workload", "repeats_target", Number(lo=0.001, hi=0.5), 'With repeats = "auto": the 95 % half-width '
        "of the mean throughput, as a fraction of it", 0.02),
    Key("workload", "repeats_max", Whole(lo=2, hi=100), 'With repeats = "auto": the most repeats', 5),
    Key("workload", "temperature", Number(lo=0.0, hi=2.0), "Sampling temperature, always sent explicitly: "
        "acceptance depends on it", 0.0, required="workload.temperature must be set: acceptance depends on it, "
        "so it is never left to a default", label="Temperature", new=True),
    Key("workload", "top_p", Number(lo=0.0001, hi=1.0), "Nucleus sampling's top-p", 1.0, label="top-p"),
    Key("workload", "warmup", Whole(lo=0, hi=1000), "Warm-up requests before the first measurement window at each "
        "concurrency on a server (not measured; later repeats find it warm)", 2, label="Warm-up requests"),
    Key("workload", "ignore_eos", Flag(), "Generation continues past the end of each answer: output lengths "
        "become fixed, but drafting padding text distorts acceptance", False,
        label="ignore EOS (forces every answer to max tokens)"),
    Key("methods", "method", Text(), "ngram, draft_model, suffix, mtp, eagle3 (eagle), dflash, dspark or "
        "baseline", default_says="required", label="Method"),
    Key("methods", "n", Wholes(), "Speculative tokens per step (num_speculative_tokens): a number or a list, "
        "one server each", default_says="required (but for the baseline)", label="N"),
    Key("methods", "draft", Model(), "The draft checkpoint: a folder, a Hub repo id or demo:NAME", label="Draft"),
    Key("methods", "options", Table(), "More keys of vLLM's --speculative-config", {}, label="Options"),
    Key("methods", "optional", Flag(), "Skip the method, rather than refuse the plan, where the vLLM environment "
        "lacks its package", False, label="Optional"),
    Key("methods", "acceptance", Kind(), "What-if sweeps: the imposed per-position acceptance (a list, "
        "{p1, decay}, {mal}, {published} or {rates, source})"),
)


def keys(table: str | None = None) -> list[Key]:
    """The declared keys, in declaration order; those of one table when it is named."""
    return [k for k in KEYS if table is None or k.table == table]


def key(dotted: str) -> Key:
    for k in KEYS:
        if k.dotted == dotted:
            return k
    raise KeyError(dotted)


def names(table: str) -> list[str]:
    return [k.name for k in keys(table)]


def said(names: list[str]) -> str:
    """`a, b or c`, as a refusal lists what was expected."""
    return " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)


def top_level() -> list[str]:
    """What a plan may hold at its top: the tables and the top-level keys."""
    return [t for t in TABLES if t] + [k.name for k in keys("")]


def read(table: dict[str, Any], dotted: str, where: str | None = None) -> Any:
    """The key's value in `table` (the plan table it belongs to), checked, or its default. `where`
    names it in a refusal when not its dotted path (methods #2.n)."""
    k = key(dotted)
    if k.name not in table:
        if k.required:
            raise PlanError(k.required)
        # Defaults are checked too: what the plan gets is the kind's value (an env as sorted pairs).
        return None if k.default is None else k.kind.check(copy.deepcopy(k.default), where or k.dotted)
    return k.kind.check(table[k.name], where or k.dotted)


def settings(doc: dict[str, Any]) -> dict[str, object]:
    """Every key outside [[methods]] as the plan gives it, checked, or its default: what a key the
    loader has no use of its own for is read as (Plan.settings)."""
    out: dict[str, object] = {}
    for k in KEYS:
        if k.table == "methods":
            continue
        table = doc if not k.table else doc.get(k.table, {})
        out[k.dotted] = read(table if isinstance(table, dict) else {}, k.dotted)
    return out


def new_plan_values(table: str) -> dict[str, object]:
    """The keys of a table `draftbench new` writes, with their defaults."""
    return {k.name: copy.deepcopy(k.default) for k in keys(table) if k.new}
