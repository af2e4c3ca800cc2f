"""What a plan expands into: servers (one launch each), runs (one measurement window each) and the
plan that orders them; pure data with the keys that let a sweep resume."""

from __future__ import annotations

from typing import Any
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace

from workbench import methods
from workbench.plan import acceptance
from workbench.plan.profiles import Profile

MODES = ("exhaustive", "adaptive", "what-if")
# Drafters whose proposals come from the generated text itself: with dummy weights that text is
# noise, so what they would accept cannot be imposed meaningfully.
TEXT_DRAFTERS = ("ngram", "suffix")


@dataclass(frozen=True)
class Server:
    target: str
    served_name: str
    method: str
    n: int | None
    draft: str | None
    options: tuple[tuple[str, object], ...]
    max_model_len: int
    dtype: str
    extra_args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    enforce_eager: bool
    per_request_metrics: bool
    profile: Profile = Profile()
    # With `[sweep] relaunch = true`, repeat k of a configuration gets launch k: a server of its
    # own, so launch-to-launch drift (placement, clocks, compilation) enters the interval of
    # the repeats. 0 when every repeat shares one server.
    launch: int = 0
    # A what-if server (`[sweep] mode = "what-if"`): served with dummy weights from the
    # checkpoints' configs, a speculative one told to accept `imposed` (per-position unconditional
    # rates) through vLLM's synthetic rejection sampler; `imposed_source` says where that came from.
    what_if: bool = False
    imposed: tuple[float, ...] | None = None
    imposed_source: str | None = None

    @property
    def key(self) -> str:
        fields = asdict(self)
        del fields["profile"]
        if not self.launch:
            del fields["launch"]  # keeps the keys of plans written before the option existed
        if not self.what_if:
            for name in ("what_if", "imposed", "imposed_source"):
                del fields[name]  # likewise
        if not self.profile.is_default:
            # Keys of plans written before profiles existed stay the same (their runs resume).
            fields["profile"] = self.profile.key_fields()
        return _hash(fields)

    def imposed_json(self) -> str | None:
        """The imposed curve as stored with each run: rates, where they came from, the MAL they imply."""
        if self.imposed is None:
            return None
        return json.dumps({"rates": list(self.imposed), "source": self.imposed_source,
                           "mal": round(acceptance.mal_of(self.imposed), 4)})

    def speculative_config(self) -> dict[str, Any] | None:
        options = dict(self.options)
        m = methods.get(self.method)
        tp = self.profile.tensor_parallel_size
        if tp > 1 and m.draft != "none" and "draft_tensor_parallel_size" not in options:
            # Said outright rather than left to vLLM's default, so the stored command shows it.
            options["draft_tensor_parallel_size"] = self.profile.draft_tensor_parallel_size or tp
        config = methods.speculative_config(self.method, self.n, self.draft, options)
        if config is not None and self.imposed is not None:
            config["rejection_sample_method"] = "synthetic"
            config["synthetic_acceptance_rates"] = list(self.imposed)
        return config


@dataclass(frozen=True)
class Run:
    server: Server
    workload: str
    concurrency: int
    request_rate: float | None
    repeat: int
    num_prompts: int
    max_tokens: int
    temperature: float
    top_p: float
    warmup: int
    ignore_eos: bool = False

    @property
    def key(self) -> str:
        fields = asdict(self)
        if not self.ignore_eos:
            del fields["ignore_eos"]  # keeps the keys of plans written before the option existed
        if not self.server.launch:
            del fields["server"]["launch"]  # likewise
        if not self.server.what_if:
            for name in ("what_if", "imposed", "imposed_source"):
                del fields["server"][name]  # likewise
        return _hash(fields)

    @property
    def label(self) -> str:
        n = "" if self.server.n is None else f" N={self.server.n}"
        what_if = " (what-if)" if self.server.what_if else ""
        return f"{self.server.method}{n}{what_if} · {self.workload} · c={self.concurrency} · #{self.repeat}"


@dataclass(frozen=True)
class AutoRepeats:
    """`repeats = "auto"`: each configuration repeated until the 95 % half-width of its mean output
    throughput is within `target` of the mean, at most `maximum` times (workbench.analysis.repeats)."""
    target: float = 0.02
    maximum: int = 5


@dataclass
class Plan:
    name: str
    text: str
    path: str
    runs: list[Run] = field(default_factory=list)
    health_timeout_s: float = 600.0
    skipped: list[str] = field(default_factory=list)
    # or "adaptive": N chosen by prediction (workbench.sweep.adaptive); or "what-if": every server
    # with dummy weights and imposed acceptance (workbench.plan.acceptance), run as exhaustive.
    mode: str = "exhaustive"
    identity: str | None = None  # a part of a plan keeps the whole plan's experiment
    order: dict[str, int] | None = None  # and the whole plan's run order
    # Servers at once: a number, or "auto" (as many as the GPU slots allow); None: not said (one,
    # or "auto" over the GPUs named on the command line).
    parallel: int | str | None = None
    # Repeats that stop when the interval is narrow enough; None: every repeat listed runs.
    auto_repeats: AutoRepeats | None = None
    # `[sweep] baseline_retries`: how many more times a failed baseline run is tried before the
    # speculative runs start; `without_baseline`: what they do when it still failed ("skip": they
    # wait for a sweep that has a baseline; "run": measured anyway). Neither changes the plan's hash.
    baseline_retries: int = 1
    without_baseline: str = "skip"
    # Which time the plan is run as a new experiment (`draftbench run --again`): experiments are
    # told apart by their plan's hash, so a later attempt salts it; the first keeps the plain hash.
    attempt: int = 1
    # Every key outside [[methods]] as read through its declaration (workbench.plan.schema), by its
    # dotted path, defaults filled in: where a key the loader has no use of its own for is read.
    # Not part of the hash, which the runs' keys already make.
    settings: dict[str, object] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        if self.identity:
            return self.identity
        doc: dict[str, object] = {"name": self.name, "runs": [r.key for r in self.runs]}
        if self.mode != "exhaustive":
            doc["mode"] = self.mode  # keeps the hashes of exhaustive plans as they were
        if self.attempt > 1:
            doc["attempt"] = self.attempt
        return _hash(doc)

    def seq(self, index: int, run: Run) -> int:
        return self.order[run.key] if self.order else index

    def part(self, runs: list[Run]) -> "Plan":
        """Some of this plan's runs, recorded in the same experiment and order as the whole plan."""
        return replace(self, runs=runs, identity=self.hash,
                       order=self.order or {r.key: i for i, r in enumerate(self.runs)})

    def servers(self) -> list[tuple[Server, list[Run]]]:
        """Runs grouped by server configuration, in plan order: one launch serves each group."""
        groups: dict[str, tuple[Server, list[Run]]] = {}
        for r in self.runs:
            groups.setdefault(r.server.key, (r.server, []))[1].append(r)
        return list(groups.values())


def parse_parallel(value: object, what: str = "parallel") -> int | str:
    """How many servers run at once: "auto" or a whole number of at least 1 (ValueError otherwise)."""
    if value == "auto":
        return "auto"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'{what} must be "auto" or a whole number of at least 1, not {value!r}')
    return value


def _hash(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]
