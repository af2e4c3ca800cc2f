"""vLLM's Prometheus counters: one scrape parsed into a Snapshot, and the Window between two scrapes
with the figures derived from it.

Definitions match vLLM's own (the README's Metrics section): MAL = 1 + accepted / drafts, acceptance rate =
accepted / drafted, per-position acceptance p[i] = accepted_pos[i] / drafts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
GENERATION_TOKENS = "vllm:generation_tokens"
PROMPT_TOKENS = "vllm:prompt_tokens"
REQUEST_SUCCESS = "vllm:request_success"
# Prompt tokens looked up in the prefix cache, and those found there.
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits"
COUNTERS = {
    DRAFTS: "drafts", DRAFT_TOKENS: "draft_tokens", ACCEPTED: "accepted",
    GENERATION_TOKENS: "generation_tokens", PROMPT_TOKENS: "prompt_tokens", REQUEST_SUCCESS: "requests_finished",
    PREFIX_CACHE_QUERIES: "prefix_cache_queries", PREFIX_CACHE_HITS: "prefix_cache_hits",
}
GAUGES = {
    "vllm:num_requests_running": "running", "vllm:num_requests_waiting": "waiting",
    "vllm:kv_cache_usage_perc": "kv_cache_usage", "vllm:gpu_cache_usage_perc": "kv_cache_usage",
}


@dataclass
class Snapshot:
    """One scrape: counters per (figure, engine), per-position counters per (engine, position)."""
    t: float
    counters: dict[tuple[str, str], float] = field(default_factory=dict)
    positions: dict[tuple[str, int], float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)

    @property
    def speculative(self) -> bool:
        return any(name == "drafts" for name, _ in self.counters)

    def total(self, name: str) -> float:
        return sum(v for (n, _), v in self.counters.items() if n == name)

    @property
    def num_positions(self) -> int:
        return 1 + max((p for _, p in self.positions), default=-1)


def parse(text: str, t: float | None = None) -> Snapshot:
    snap = Snapshot(time.time() if t is None else t)
    for family in text_string_to_metric_families(text):
        if family.name in COUNTERS:
            figure = COUNTERS[family.name]
            for s in family.samples:
                # prometheus_client keeps the `_created` twins as samples of the same family.
                if s.name.endswith("_total"):
                    key = (figure, s.labels.get("engine", "0"))
                    snap.counters[key] = snap.counters.get(key, 0.0) + s.value
        elif family.name == ACCEPTED_PER_POS:
            for s in family.samples:
                if s.name.endswith("_total"):
                    snap.positions[(s.labels.get("engine", "0"), int(s.labels["position"]))] = s.value
        elif family.name in GAUGES:
            figure = GAUGES[family.name]
            snap.gauges[figure] = snap.gauges.get(figure, 0.0) + sum(s.value for s in family.samples)
    return snap


@dataclass(frozen=True)
class Window:
    """Counter deltas between two scrapes, summed over engines."""
    seconds: float
    drafts: float
    draft_tokens: float
    accepted: float
    accepted_per_position: tuple[float, ...]
    generation_tokens: float
    prompt_tokens: float
    requests_finished: float
    prefix_cache_queries: float = 0.0
    prefix_cache_hits: float = 0.0

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """The share of prompt tokens looked up that the prefix cache held (None: none looked up,
        or a vLLM without the counters)."""
        return self.prefix_cache_hits / self.prefix_cache_queries if self.prefix_cache_queries else None

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1.0 + self.accepted / self.drafts if self.drafts else None

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted / self.draft_tokens if self.draft_tokens else None

    @property
    def per_position(self) -> list[float] | None:
        """Survival curve: the share of drafts whose first i+1 tokens were all accepted."""
        if not self.drafts:
            return None
        return [a / self.drafts for a in self.accepted_per_position]

    @property
    def conditional(self) -> list[float | None] | None:
        p = self.per_position
        if p is None:
            return None
        return [p[0] if i == 0 else (p[i] / p[i - 1] if p[i - 1] else None) for i in range(len(p))]

    @property
    def generation_throughput(self) -> float | None:
        return self.generation_tokens / self.seconds if self.seconds > 0 else None


def window(before: Snapshot, after: Snapshot) -> Window:
    def delta(name: str) -> float:
        keys = {k for k in after.counters if k[0] == name}
        return sum(after.counters[k] - before.counters.get(k, 0.0) for k in keys)

    n = max(before.num_positions, after.num_positions)
    per_pos = tuple(
        sum(after.positions.get((e, i), 0.0) - before.positions.get((e, i), 0.0)
            for e in {e for e, _ in after.positions})
        for i in range(n)
    )
    return Window(
        seconds=after.t - before.t,
        drafts=delta("drafts"), draft_tokens=delta("draft_tokens"), accepted=delta("accepted"),
        accepted_per_position=per_pos, generation_tokens=delta("generation_tokens"),
        prompt_tokens=delta("prompt_tokens"), requests_finished=delta("requests_finished"),
        prefix_cache_queries=delta("prefix_cache_queries"), prefix_cache_hits=delta("prefix_cache_hits"),
    )
