"""vLLM's Prometheus counters, windows between two scrapes, and the figures derived from them.

`scrape` parses one scrape into a Snapshot and takes the Window between two; `log_lines` reads the
server's own periodic speculative decoding log line; `telemetry` samples the GPUs. The names below
are re-exported so callers can keep using `metrics.parse`, `metrics.window` and the rest.
"""

from workbench.metrics.log_lines import LOG_MARK, parse_log_line
from workbench.metrics.scrape import (
    ACCEPTED,
    ACCEPTED_PER_POS,
    COUNTERS,
    DRAFT_TOKENS,
    DRAFTS,
    GAUGES,
    GENERATION_TOKENS,
    PROMPT_TOKENS,
    REQUEST_SUCCESS,
    Snapshot,
    Window,
    parse,
    window,
)

__all__ = [
    "ACCEPTED", "ACCEPTED_PER_POS", "COUNTERS", "DRAFT_TOKENS", "DRAFTS", "GAUGES", "GENERATION_TOKENS",
    "LOG_MARK", "PROMPT_TOKENS", "REQUEST_SUCCESS", "Snapshot", "Window", "parse", "parse_log_line", "window",
]
