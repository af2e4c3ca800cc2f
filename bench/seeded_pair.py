"""A GPU-bound target with a real draft model that agrees with it part of the time, from seeded
random weights written once on the GPU host.

Why not dummy weights: vLLM's dummy loader fills every tensor with small values from one seed, so
a draft that shares the target's width shares its embedding and LM head tensor for tensor, and
with weights that small every layer adds almost nothing to the residual stream: both models then
predict the same next token from the last one alone, and the draft is accepted every time (MAL
N+1). A draft of another width shares nothing and is never accepted (MAL 1). Neither is a drafter
whose acceptance means anything.

Here the target has the Llama-3.1-8B shape (resources/shapes/llama-3.1-8b, vocabulary 128,256,
so the LM head costs what the real one does) and its weights are written to safetensors: an
embedding and an LM head of unit scale, layers of small weights, so that the next token is, to
first order, a function g of the last one (the layers still cost a real 8B decode step). The draft
is the target's first 2 layers with the same embedding and final norm, and the target's LM head
plus seeded noise of scale sigma: its next-token map g' differs from g on some tokens. Speculative
decoding then accepts a drafted token where g' agrees with g along the text the target writes, and
a chain of them while the agreement lasts: per-position acceptance that falls with the position,
from real drafting and vLLM's real rejection sampler.

sigma is chosen before anything is served by simulating that greedy speculative decoding on the
GPU from the prompts' last tokens (the maps g and g' over the whole vocabulary are two GEMMs), so
that the first position is accepted about --p1 of the time; vLLM's own counters then measure the
curve (the target's layers add a little context the simulation leaves out).

usage (GPU host; torch, safetensors and the project importable):
  python bench/seeded_pair.py --out /tmp/pair [--draft-layers 2] [--p1 0.65] [--n 5]
writes OUT/target and OUT/draft (config, tokenizer, weights) and OUT/pair.json (sigma, simulated
curve, seconds). Rerunning with the same arguments reuses what is there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import SMOKE_HELP, skipped  # noqa: E402

SHAPE = "llama-3.1-8b"
LAYER_SCALE = 1e-3  # layer weights: small, so the residual stream stays the token's embedding
SHARD_BYTES = 4 << 30
DEVICE = "cuda"
# --tiny: the same vocabulary and layout at a size the CPU build of vLLM serves in seconds (a check
# of this script and of the drivers that use its pair, not a measurement).
TINY = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 4, "head_dim": 64}


def tensor_shapes(cfg: dict, layers: int) -> dict[str, tuple[int, ...]]:
    """HF Llama parameter names and shapes for `layers` decoder layers."""
    h, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    out = {"model.embed_tokens.weight": (vocab, h), "model.norm.weight": (h,), "lm_head.weight": (vocab, h)}
    for i in range(layers):
        p = f"model.layers.{i}."
        out |= {p + "self_attn.q_proj.weight": (cfg["num_attention_heads"] * hd, h),
                p + "self_attn.k_proj.weight": (kv, h), p + "self_attn.v_proj.weight": (kv, h),
                p + "self_attn.o_proj.weight": (h, cfg["num_attention_heads"] * hd),
                p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h),
                p + "mlp.down_proj.weight": (h, inter),
                p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,)}
    return out


def make_tensor(name: str, shape, seed: int, torch):
    """One parameter, the same for a given name and seed on every run (so the draft's copies of
    the target's tensors are the target's)."""
    if name.endswith("norm.weight"):
        return torch.ones(shape, dtype=torch.bfloat16, device=DEVICE)
    g = torch.Generator(device=DEVICE).manual_seed(seed * 2**32 + zlib.crc32(name.encode()))
    t = torch.empty(shape, dtype=torch.float32, device=DEVICE).uniform_(-1, 1, generator=g)
    if name.startswith("model.layers."):
        t.mul_(LAYER_SCALE)
    return t.to(torch.bfloat16)


def save(folder: Path, tensors: dict, torch) -> None:
    """Safetensors shards with an index, as a Hub checkpoint has them."""
    from safetensors.torch import save_file
    shards, cur, size = [], {}, 0
    for name, t in tensors.items():
        if cur and size + t.numel() * 2 > SHARD_BYTES:
            shards.append(cur)
            cur, size = {}, 0
        cur[name] = t
        size += t.numel() * 2
    shards.append(cur)
    index = {"metadata": {"total_size": sum(t.numel() * 2 for t in tensors.values())}, "weight_map": {}}
    for i, shard in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: v.contiguous().cpu() for k, v in shard.items()}, str(folder / fname), metadata={"format": "pt"})
        index["weight_map"] |= {k: fname for k in shard}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))


def next_token_map(embed, head, torch, chunk: int = 8192):
    """g(x) = argmax of the LM head over the normalised embedding of x, for every token x."""
    out = torch.empty(embed.shape[0], dtype=torch.long, device=DEVICE)
    for s in range(0, embed.shape[0], chunk):
        e = embed[s:s + chunk].float()
        e = e * torch.rsqrt(e.pow(2).mean(-1, keepdim=True) + 1e-5)
        out[s:s + chunk] = (e.to(torch.bfloat16) @ head.T).argmax(-1)
    return out


def simulate(g, gd, starts: list[int], n: int, tokens: int) -> list[float]:
    """Greedy speculative decoding with the maps as models: per-position unconditional acceptance
    (accepted at position i / drafts), as vLLM counts it."""
    g, gd = g.tolist(), gd.tolist()
    accepted, drafts = [0] * n, 0
    for start in starts:
        x, made = start, 0
        while made < tokens:
            drafts += 1
            d, t, ok = x, x, True
            k = 0
            for i in range(n):
                d = gd[d] if ok else d
                t = g[t]
                if ok and d == t:
                    accepted[i] += 1
                    k += 1
                else:
                    ok = False
            # k accepted plus the target's own token
            for _ in range(k + 1):
                x = g[x]
            made += k + 1
    return [a / drafts for a in accepted]


def last_prompt_tokens(target: Path, count: int = 32) -> list[int]:
    """The last token of each chat prompt as the server sees it (the template's generation prompt)."""
    from transformers import AutoTokenizer
    from workbench.load import workloads
    tok = AutoTokenizer.from_pretrained(str(target))
    prompts = workloads.sample(workloads.load("builtin"), count, seed=1)
    out = []
    for p in prompts:
        text = tok.apply_chat_template([{"role": "user", "content": p.text}], add_generation_prompt=True,
                                       tokenize=False)
        out.append(int(tok(text, add_special_tokens=False)["input_ids"][-1]))
    return out


def smoke() -> int:
    """The sigma search's pieces on a 512-token vocabulary on the CPU: maps, simulated curve."""
    import torch
    global DEVICE
    DEVICE = "cpu"
    skipped("the 8B pair's weights and the chat template (a GPU host writes them)")
    embed = make_tensor("model.embed_tokens.weight", (512, 64), 0, torch)
    head = make_tensor("lm_head.weight", (512, 64), 0, torch)
    noise = make_tensor("draft.noise", (512, 64), 1, torch)
    g = next_token_map(embed, head, torch)
    for sigma in (0.0, 0.1, 0.4):
        gd = next_token_map(embed, (head.float() + sigma * noise.float()).to(torch.bfloat16), torch)
        curve = simulate(g, gd, list(range(8)), 3, 64)
        print(f"sigma {sigma}: map agreement {(g == gd).float().mean().item():.3f}, simulated curve "
              f"{[round(c, 3) for c in curve]}")
    return 0


def main() -> int:
    if "--smoke" in sys.argv[1:]:
        return smoke()
    import torch
    from workbench.checkpoints import shapes
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--draft-layers", type=int, default=2)
    ap.add_argument("--p1", type=float, default=0.65, help="the first position's simulated acceptance")
    ap.add_argument("--n", type=int, default=5, help="positions simulated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="a 4-layer, 256-wide target on the CPU")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    global DEVICE
    if args.tiny:
        DEVICE = "cpu"
    out = Path(args.out)
    done = out / "pair.json"
    if done.exists():
        print(done.read_text())
        return 0
    t0 = time.time()
    src = shapes.folder(SHAPE)
    cfg = json.loads((src / "config.json").read_text())
    if args.tiny:
        cfg |= TINY | {"torch_dtype": "float32"}
    target, draft = out / "target", out / "draft"
    for d in (target, draft):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src, d)
    (target / "config.json").write_text(json.dumps(cfg, indent=2))
    names = tensor_shapes(cfg, cfg["num_hidden_layers"])
    embed = make_tensor("model.embed_tokens.weight", names["model.embed_tokens.weight"], args.seed, torch)
    head = make_tensor("lm_head.weight", names["lm_head.weight"], args.seed, torch)
    g = next_token_map(embed, head, torch)
    starts = sorted(set(last_prompt_tokens(target)))
    noise = make_tensor("draft.noise", names["lm_head.weight"], args.seed + 1, torch)
    lo, hi, tried = 0.0, 2.0, []
    for _ in range(14):  # bisection on sigma: acceptance falls as the noise grows
        sigma = (lo + hi) / 2
        gd = next_token_map(embed, (head.float() + sigma * noise.float()).to(torch.bfloat16), torch)
        curve = simulate(g, gd, starts, args.n, 256)
        tried.append({"sigma": sigma, "curve": [round(c, 3) for c in curve],
                      "agree": round((g == gd).float().mean().item(), 4)})
        print(f"sigma {sigma:.5f}: map agreement {tried[-1]['agree']:.3f}, simulated {tried[-1]['curve']}", flush=True)
        if abs(curve[0] - args.p1) < 0.03:
            break
        lo, hi = (sigma, hi) if curve[0] > args.p1 else (lo, sigma)
    best = min(tried, key=lambda t: abs(t["curve"][0] - args.p1))  # one text's curve moves in steps
    sigma = best["sigma"]
    draft_head = (head.float() + sigma * noise.float()).to(torch.bfloat16)
    del noise
    t1 = time.time()
    # The target, then the draft: its first layers are the target's tensors (same names, same seeds).
    tensors = {k: (embed if k == "model.embed_tokens.weight" else head if k == "lm_head.weight"
                   else make_tensor(k, s, args.seed, torch)) for k, s in names.items()}
    save(target, tensors, torch)
    del tensors
    dcfg = dict(cfg, num_hidden_layers=args.draft_layers)
    (draft / "config.json").write_text(json.dumps(dcfg, indent=2))
    dnames = tensor_shapes(dcfg, args.draft_layers)
    dtensors = {k: (embed if k == "model.embed_tokens.weight" else draft_head if k == "lm_head.weight"
                    else make_tensor(k, s, args.seed, torch)) for k, s in dnames.items()}
    save(draft, dtensors, torch)
    info = {"shape": SHAPE, "draft_layers": args.draft_layers, "sigma": sigma, "layer_scale": LAYER_SCALE,
            "start_tokens": starts, "simulated_curve": best["curve"], "map_agreement": best["agree"],
            "bisection": tried, "tune_s": round(t1 - t0, 1), "write_s": round(time.time() - t1, 1),
            "target_bytes": sum(f.stat().st_size for f in target.glob("*.safetensors")),
            "draft_bytes": sum(f.stat().st_size for f in draft.glob("*.safetensors"))}
    done.write_text(json.dumps(info, indent=1))
    print(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
