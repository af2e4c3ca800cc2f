"""Steady state: the part of a measurement window in which the server sees the load it is measured
at (pure: no I/O).

A closed-loop window ramps up while its first requests are sent and drains while its last ones
finish: near its ends fewer requests are in flight than the run's concurrency, so the
whole-window throughput mixes in a lighter load (short windows most of all). The steady segment
is the longest stretch in which at least STEADY_SHARE of the target concurrency is in flight;
its throughput is the one a sustained load gets. `vllm bench serve` reports the whole window, so
that figure stays what exports and the fidelity comparison use.
"""

from __future__ import annotations

from typing import Any
from dataclasses import dataclass

STEADY_SHARE = 0.9
# One request ending and the next one of its slot starting leave a dip of an event-loop turn;
# that is the client's turnaround, not a lighter load, so a dip this short does not end a segment.
BRIDGE_S = 0.1
# Below this length a steady segment holds too few requests to stand for a sustained load, and
# a comparison keeps the whole window.
MIN_STEADY_S = 10.0


@dataclass(frozen=True)
class Span:
    """One request as the client timed it (seconds on one clock): sent, first token, last token."""
    start: float
    first: float
    end: float
    tokens: int


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    tokens: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def tok_s(self) -> float | None:
        return self.tokens / self.seconds if self.seconds > 0 else None


def _above(spans: list[Span], threshold: float) -> list[tuple[float, float]]:
    """The stretches in which at least `threshold` requests are in flight. At equal times a start
    counts before an end, so one request handing over to the next leaves no zero-length dip."""
    edges = sorted([(s.start, 0, 1) for s in spans] + [(s.end, 1, -1) for s in spans])
    out, count, since = [], 0, None
    for t, _, step in edges:
        count += step
        if count >= threshold and since is None:
            since = t
        elif count < threshold and since is not None:
            if t > since:
                out.append((since, t))
            since = None
    return out


def _bridged(stretches: list[tuple[float, float]], gap_s: float) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in stretches:
        if out and a - out[-1][1] < gap_s:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def tokens_between(spans: list[Span], a: float, b: float) -> float:
    """Output tokens emitted from a to b, each request's spread evenly from its first token to its
    last (a one-token request counts at its first token)."""
    total = 0.0
    for s in spans:
        if s.end > s.first:
            overlap = min(b, s.end) - max(a, s.first)
            if overlap > 0:
                total += s.tokens * overlap / (s.end - s.first)
        elif a <= s.first <= b:
            total += s.tokens
    return total


def segment(spans: list[Span], concurrency: int, share: float = STEADY_SHARE,
            bridge_s: float = BRIDGE_S) -> Segment | None:
    """The longest stretch with at least `share` x `concurrency` requests in flight, dips shorter
    than `bridge_s` bridged; None when the load never reaches it (more slots than prompts)."""
    spans = [s for s in spans if s.end >= s.start]
    if not spans or concurrency < 1:
        return None
    threshold = share * concurrency - 1e-9
    stretches = _bridged(_above(spans, threshold), bridge_s)
    if not stretches:
        return None
    a, b = max(stretches, key=lambda ab: ab[1] - ab[0])
    return Segment(a, b, tokens_between(spans, a, b))


def figures(spans: list[Span], concurrency: int, window_s: float | None = None) -> dict[str, Any]:
    """The run's steady-state columns: `steady_s` (0.0 when there is no segment) and
    `steady_tok_s`. The segment lies inside the window by construction; `window_s` caps it
    against the two clocks the client reads disagreeing by a hair."""
    seg = segment(spans, concurrency)
    if seg is None:
        return {"steady_s": 0.0, "steady_tok_s": None}
    seconds = min(seg.seconds, window_s) if window_s else seg.seconds
    return {"steady_s": seconds, "steady_tok_s": seg.tokens / seconds if seconds > 0 else None}


def usable(steady_tok_s: float | None, steady_s: float | None, min_s: float = MIN_STEADY_S) -> bool:
    """Whether a run's stored steady segment (its tok/s and length) is long enough to compare on."""
    return bool(steady_tok_s) and (steady_s or 0.0) >= min_s
