"""Load generation: streaming chat completions at a fixed concurrency or request rate.

`client` sends the requests and times their streams, `pool` spreads that load over processes,
`workloads` (with `prompts` and `datasets`) supplies the prompts. The client's names are
re-exported here so callers can keep using `load.generate`, `load.Sampling` and the rest.
"""

from workbench.load.client import RequestResult, Sampling, chat_body, generate, one_request, session

__all__ = ["RequestResult", "Sampling", "chat_body", "generate", "one_request", "session"]
