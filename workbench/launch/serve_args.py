"""The `vllm serve` arguments of one server configuration."""

from __future__ import annotations

from workbench import methods
from workbench.host.serving import ServingVllm
from workbench.plan import Server


def serve_args(server: Server, vllm: ServingVllm, port: int, host: str) -> list[str]:
    """`vllm` is the vLLM that serves (an image's, for a docker server): an optional flag is passed
    only where it says it accepts it."""
    args = ["serve", server.target, "--served-model-name", server.served_name,
            "--host", host, "--port", str(port), "--max-model-len", str(server.max_model_len),
            "--dtype", server.dtype]
    if server.enforce_eager:
        args.append("--enforce-eager")
    if server.what_if:
        # Random weights from config.json alone; the draft inherits the target's load config
        # (vLLM's SpeculativeConfig.draft_load_config), so neither needs its weight files.
        args += ["--load-format", "dummy"]
    args += server.profile.serve_args()
    args += methods.speculative_args(server.speculative_config())
    if server.per_request_metrics and vllm.supports("--per-request-spec-decode-metrics"):
        args += ["--per-request-spec-decode-metrics", "summary"]
    args += list(server.extra_args)
    return args
