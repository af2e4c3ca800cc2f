"""The speculative decoding figures of vLLM's own periodic log line ("SpecDecoding metrics: ...")."""

from __future__ import annotations

from typing import Any
import re

# The server's own periodic log line. Positions there are one-based and the order of the fields
# changed between versions, so each field is found by name.
LOG_MARK = "SpecDecoding metrics:"
_FIELDS = {
    "mean_acceptance_length": r"Mean acceptance length: ([\d.]+)",
    "accepted": r"Accepted: (\d+) tokens",
    "drafted": r"Drafted: (\d+) tokens",
    "acceptance_rate_pct": r"(?:Avg )?Draft acceptance rate: ([\d.]+)%",
}
_PER_POS = re.compile(r"Per-position acceptance rate: ([\d., ]+?)(?:,\s*[A-Z]|$)")


def parse_log_line(line: str) -> dict[str, Any] | None:
    if LOG_MARK not in line:
        return None
    body = line.split(LOG_MARK, 1)[1]
    out: dict[str, Any] = {}
    for key, pattern in _FIELDS.items():
        m = re.search(pattern, body)
        if m:
            out[key] = float(m.group(1))
    m = _PER_POS.search(body)
    if m:
        out["per_position"] = [float(x) for x in m.group(1).replace(" ", "").strip(",").split(",") if x]
    return out
