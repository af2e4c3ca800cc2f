"""Derives the recorded probe answer of an older vLLM release from a real recorded one: the
option blocks of the flags that release lacks are cut out of `vllm serve --help=all`, and the
versions it ships are set. tests/fixtures/vllm_probe/README.md says which release facts each
derived file rests on. Run from the repository root:

    python tests/helpers/standins/derive_probe.py SOURCE.json OUT.json VLLM TRANSFORMERS FLAG...
"""

import json
import re
import sys

_OPTION_LINE = re.compile(r"^ {2,4}-")


def without(help_text: str, flags: set[str]) -> str:
    """The help text with each option block (its line and its description) that names one of
    `flags` left out."""
    out: list[str] = []
    dropping = False
    for line in help_text.splitlines(keepends=True):
        if _OPTION_LINE.match(line) or not line.startswith(" "):
            dropping = any(f in re.findall(r"--[a-z0-9-]+", line.strip().split("  ")[0]) for f in flags)
        if not dropping:
            out.append(line)
    return "".join(out)


def main(source: str, target: str, vllm: str, transformers: str, *flags: str) -> None:
    with open(source) as f:
        answer = json.loads(f.read().strip().splitlines()[-1])
    answer.update(vllm=vllm, transformers=transformers, help=without(answer["help"], set(flags)))
    with open(target, "w") as f:
        f.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
