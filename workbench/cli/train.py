"""`draftbench train`: an EAGLE-3 (or DFlash) draft for a target from its own responses (resumes)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from workbench.cli.common import CliError, Verbs, append


def register(sub: Verbs) -> None:
    t = sub.add_parser("train", help="train an EAGLE-3 (or DFlash) draft for a target from its own responses (resumes)")
    t.add_argument("--target", required=True, help="model folder or demo:NAME")
    t.add_argument("--out", required=True, help="output folder (a rerun resumes what is there)")
    t.add_argument("--prompts", default=None, help="workload name (builtin, gsm8k, ...), a prompt file, or `self`: "
                   "prompts written by the target itself (keeps the workloads unseen for evaluation)")
    t.add_argument("--num-prompts", type=int, default=48)
    t.add_argument("--max-tokens", type=int, default=128, help="response length the target generates")
    t.add_argument("--seq-length", type=int, default=512)
    t.add_argument("--epochs", type=int, default=3)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--speculator-type", choices=["eagle3", "dflash"], default="eagle3")
    t.add_argument("--draft-vocab-size", type=int, default=4096)
    t.add_argument("--layer-ids", type=int, nargs="+", help="target layers the draft reads (default 2, L/2, L-3)")
    t.add_argument("--max-steps", type=int, help="stop training after this many steps")
    t.add_argument("--name", help="name of the catalog pair to register (default trained-eagle3-FOLDER)")
    t.add_argument("--endpoint", help="use this running vLLM server for the responses instead of starting one")
    t.add_argument("--api-key-env", help="name of the environment variable holding that server's API key")
    t.add_argument("--vllm-python", help="interpreter of the environment that has vLLM")
    t.add_argument("--events", help="append the JSON-line events to this file instead of stdout")
    t.add_argument("--reuse", metavar="FOLDER",
                   help="reuse the prompts, responses and hidden states of another training folder with the "
                        "same data settings (e.g. train a DFlash draft on an EAGLE-3 run's data)")
    t.set_defaults(handler=train_verb)


def train_verb(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import events, train

    out = Path(args.out).resolve()
    # Without --prompts, a rerun keeps the folder's source (folders made when `builtin` was the
    # default resume as they were), --reuse takes the source's; a new run writes its own prompts.
    earlier = [train.folder_state(Path(f)).get("config") or {} for f in (out, args.reuse) if f]
    prompts = args.prompts or next((c["prompts"] for c in earlier if c.get("prompts")), train.SELF_PROMPTS)
    cfg = train.TrainConfig(
        target=args.target, out=str(out), prompts=prompts, num_prompts=args.num_prompts,
        max_tokens=args.max_tokens, seq_length=args.seq_length, epochs=args.epochs, lr=args.lr,
        draft_vocab_size=args.draft_vocab_size, speculator_type=args.speculator_type, layer_ids=args.layer_ids,
        max_steps=args.max_steps, name=args.name, reuse=args.reuse)
    api_key = None
    if args.api_key_env:
        # By name, so the key never appears in a process list or a saved command line.
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise CliError(f"the environment variable {args.api_key_env} (the server's API key) is not set")
    if args.events:
        append(args.events, "events").close()  # an unwritable events file is one line, not a traceback
    emit = events.Writer.append_to(args.events) if args.events else events.Writer()
    pipeline = train.Pipeline(cfg, emit=emit, endpoint=args.endpoint, api_key=api_key,
                              vllm_python=args.vllm_python)

    def stop(signum: int, frame: FrameType | None) -> None:
        pipeline.cancel()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        summary = pipeline.run()
    except train.TrainError as exc:
        raise CliError(str(exc)) from None
    except train.Cancelled:
        print(f"draftbench: cancelled; rerun the same command to resume ({cfg.out})", file=sys.stderr)
        return 130
    print(f"draftbench: draft {summary['checkpoint']} registered as pair {summary['pair']}; "
          f"evaluate it against the baseline with: draftbench run {summary['plan']}", file=sys.stderr)
    return 0
