"""Zero-padding a Llama-style checkpoint's attention heads so that it divides over tensor-parallel
ranks without changing what it computes.

The demo target (SmolLM2-135M) has 9 query and 3 key/value heads, which no tensor-parallel size
above 1 divides, so vLLM refuses TP=2 for it. Adding whole key/value groups whose weights are
zero keeps the function exactly: a padded query head is zero, so its attention output is a mean of
zero values, and its columns of o_proj are zero as well. Existing heads keep their groups (query
head h still reads key/value head h // group), because new groups are appended at the end.

usage: python -m workbench.checkpoints.headpad SRC_DIR DST_DIR --tp 2
"""

from __future__ import annotations

from typing import Any
import argparse
import json
import math
import shutil
import sys
from pathlib import Path


def padded_heads(q_heads: int, kv_heads: int, tp: int) -> tuple[int, int]:
    """The smallest (query, key/value) head counts >= the given ones, keeping the group size,
    with both divisible by `tp`."""
    group = q_heads // kv_heads
    kv = kv_heads
    while kv % tp or (kv * group) % tp:
        kv += 1
    return kv * group, kv


def pad(src: str | Path, dst: str | Path, tp: int) -> dict[str, Any]:
    # Deferred: torch and safetensors take seconds to import and only padding the weights needs them
    import torch
    from safetensors.torch import load_file, save_file

    src, dst = Path(src), Path(dst)
    config = json.loads((src / "config.json").read_text())
    q, kv = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    head_dim = config.get("head_dim") or config["hidden_size"] // q
    new_q, new_kv = padded_heads(q, kv, tp)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy2(f, dst / f.name)
    for shard in sorted(src.glob("*.safetensors")):
        tensors = load_file(str(shard))
        out = {}
        for name, t in tensors.items():
            if name.endswith(("self_attn.q_proj.weight", "self_attn.q_proj.bias")):
                t = torch.cat([t, t.new_zeros(((new_q - q) * head_dim, *t.shape[1:]))])
            elif name.endswith(("self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                "self_attn.k_proj.bias", "self_attn.v_proj.bias")):
                t = torch.cat([t, t.new_zeros(((new_kv - kv) * head_dim, *t.shape[1:]))])
            elif name.endswith("self_attn.o_proj.weight"):
                t = torch.cat([t, t.new_zeros((t.shape[0], (new_q - q) * head_dim))], dim=1)
            out[name] = t.contiguous()
        save_file(out, str(dst / shard.name), metadata={"format": "pt"})
    # head_dim is said outright: hidden_size / heads no longer gives it.
    config.update(num_attention_heads=new_q, num_key_value_heads=new_kv, head_dim=head_dim)
    (dst / "config.json").write_text(json.dumps(config, indent=2))
    return {"heads": [q, new_q], "kv_heads": [kv, new_kv], "head_dim": head_dim,
            "divides": math.gcd(new_q, tp) == tp}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench.checkpoints.headpad", description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--tp", type=int, default=2)
    args = ap.parse_args(argv)
    print(json.dumps(pad(args.src, args.dst, args.tp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
