"""Launch profiles: where and how vLLM runs — a local environment, a docker image, or an attached
server — with tensor parallelism, GPU selection and ROCm knobs.

A profile is part of a plan (`[profile]`, or `profile = "NAME"` for one saved in profiles.toml in
the config folder). It only shapes argv and environment: `launch` turns it into a process.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, overload

import tomli_w

from workbench import paths
from workbench.errors import DraftbenchError

KINDS = ("local", "docker", "attach")
PLATFORMS = ("auto", "cuda", "rocm", "cpu")
ROCM_IMAGE = "vllm/vllm-openai-rocm:latest"
CUDA_IMAGE = "vllm/vllm-openai:latest"
# The ROCm container needs the kernel fusion driver and render nodes, the video group, host IPC
# for shared-memory tensors, and relaxed ptrace/seccomp for the ROCm profiler hooks (AMD's docs).
ROCM_DOCKER_FLAGS = ("--device", "/dev/kfd", "--device", "/dev/dri", "--group-add=video", "--ipc=host",
                     "--cap-add=SYS_PTRACE", "--security-opt", "seccomp=unconfined")
CUDA_DOCKER_FLAGS = ("--ipc=host",)
# Names whose values are secrets: passed to a container by name only (`-e NAME`), so the value
# never shows in argv, `ps`, the stored command or logs.
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BACKEND = re.compile(r"^[A-Za-z0-9_]+$")


class ProfileError(DraftbenchError, ValueError):
    """A one-line reason a profile cannot be used."""


@dataclass(frozen=True)
class Profile:
    name: str = "local"
    kind: str = "local"
    platform: str = "auto"                 # which GPU stack the server uses; auto = detect on the host
    python: str | None = None              # local: an interpreter (or virtualenv) that has vLLM
    tensor_parallel_size: int = 1
    draft_tensor_parallel_size: int | None = None  # 1 or the target's; None = vLLM's default (the target's)
    gpus: tuple[int, ...] = ()             # physical indices; () = whatever the host exposes
    rocm_use_aiter: bool | None = None     # VLLM_ROCM_USE_AITER; None leaves vLLM's default (off)
    attention_backend: str | None = None   # e.g. TRITON_ATTN for DFlash on ROCm
    image: str | None = None               # docker: defaults to the official image of the platform
    docker: str = "docker"                 # docker: the client executable
    hf_cache: str | None = None            # docker: host HF cache mounted into the container
    base_url: str | None = None            # attach: an already running server
    api_key_env: str | None = None         # attach: the environment variable holding its API key
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def is_default(self) -> bool:
        return replace(self, name="local") == Profile()

    def key_fields(self) -> dict[str, Any]:
        """What distinguishes measurements: everything but the label."""
        d = asdict(self)
        del d["name"]
        return d

    def gpu_platform(self, detected: str) -> str:
        """'cuda', 'rocm' or 'cpu' for this profile on a host whose tools report `detected`."""
        if self.platform != "auto":
            return self.platform
        return {"rocm": "rocm", "cuda": "cuda"}.get(detected, "cpu")

    def visible_devices_env(self, platform: str) -> dict[str, str]:
        """GPU selection. vLLM on ROCm copies HIP_VISIBLE_DEVICES into CUDA_VISIBLE_DEVICES and
        rejects a mismatch, so both are set to the same list there (one inherited from the shell
        would otherwise contradict ours)."""
        if not self.gpus:
            return {}
        value = ",".join(str(g) for g in self.gpus)
        if platform == "rocm":
            return {"CUDA_VISIBLE_DEVICES": value, "HIP_VISIBLE_DEVICES": value}
        if platform == "cuda":
            # CUDA numbers devices fastest-first by default; NVML and nvidia-smi use PCI order.
            # PCI order on both sides makes "physical index" mean the same GPU everywhere.
            return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": value}
        return {}

    def server_env(self, platform: str) -> dict[str, str]:
        env = self.visible_devices_env(platform)
        if platform == "rocm" and self.rocm_use_aiter is not None:
            env["VLLM_ROCM_USE_AITER"] = "1" if self.rocm_use_aiter else "0"
        env.update(dict(self.env))
        return env

    def serve_args(self) -> list[str]:
        """`vllm serve` flags that come from the profile."""
        args: list[str] = []
        if self.tensor_parallel_size > 1:
            args += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.attention_backend:
            args += ["--attention-backend", self.attention_backend]
        return args

    def physical_to_visible(self) -> dict[int, int]:
        """Physical GPU index -> the index vLLM sees (its cuda:N), for labelling telemetry."""
        return {g: i for i, g in enumerate(self.gpus)}

    def to_table(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if v not in (None, (), [], {})}
        if self.gpus:
            d["gpus"] = list(self.gpus)
        if self.env:
            d["env"] = dict(self.env)
        return d


@overload
def _int(table: dict[str, Any], key: str, lo: int, hi: int, default: int) -> int: ...


@overload
def _int(table: dict[str, Any], key: str, lo: int, hi: int, default: None = None) -> int | None: ...


def _int(table: dict[str, Any], key: str, lo: int, hi: int, default: int | None = None) -> int | None:
    value = table.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ProfileError(f"profile.{key} must be a whole number from {lo} to {hi}, not {value!r}")
    return value


def _str(table: dict[str, Any], key: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(f"profile.{key} must be a non-empty string, not {value!r}")
    return value.strip()


def from_table(table: dict[str, Any], base: Path | None = None) -> Profile:
    """Validate a `[profile]` table (or one saved profile)."""
    if not isinstance(table, dict):
        raise ProfileError("profile must be a table")
    known = set(Profile.__dataclass_fields__)
    unknown = sorted(set(table) - known)
    if unknown:
        raise ProfileError(f"profile: unknown key {unknown[0]!r}; expected {', '.join(sorted(known))}")
    kind = table.get("kind", "local")
    if kind not in KINDS:
        raise ProfileError(f"profile.kind must be one of {', '.join(KINDS)}, not {kind!r}")
    platform = table.get("platform", "auto")
    if platform not in PLATFORMS:
        raise ProfileError(f"profile.platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")
    tp = _int(table, "tensor_parallel_size", 1, 512, 1)
    draft_tp = _int(table, "draft_tensor_parallel_size", 1, 512)
    if draft_tp not in (None, 1, tp):
        # vLLM's own rule (SpeculativeConfig): a draft runs unsharded or sharded like the target.
        raise ProfileError(f"profile.draft_tensor_parallel_size must be 1 or the target's "
                           f"tensor_parallel_size ({tp}), not {draft_tp}")
    gpus = table.get("gpus", [])
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        gpus = [gpus]
    if (not isinstance(gpus, list) or any(isinstance(g, bool) or not isinstance(g, int) or g < 0 for g in gpus)
            or len(set(gpus)) != len(gpus)):
        raise ProfileError(f"profile.gpus must be a list of distinct GPU indices (0, 1, ...), not {gpus!r}")
    if gpus and len(gpus) < tp:
        raise ProfileError(f"profile.gpus names {len(gpus)} GPU(s) but tensor_parallel_size is {tp}: "
                           "each shard needs its own GPU")
    aiter = table.get("rocm_use_aiter")
    if aiter is not None and not isinstance(aiter, bool):
        raise ProfileError("profile.rocm_use_aiter must be true or false")
    backend = _str(table, "attention_backend")
    if backend is not None and not _BACKEND.match(backend):
        raise ProfileError(f"profile.attention_backend must be a vLLM backend name such as TRITON_ATTN, not {backend!r}")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                            for v in env.values()):
        raise ProfileError("profile.env must be a table of NAME = value")
    for k in env:
        if not _ENV_NAME.match(k):
            raise ProfileError(f"profile.env: {k!r} is not an environment variable name")
        if k in SECRET_ENV:
            raise ProfileError(f"profile.env may not hold {k}: secrets come from your environment, "
                               "never from a file Draftbench stores")
    python = _str(table, "python")
    if python is not None and base is not None and not python.startswith(("/", "~")) and "/" in python:
        python = str((base / python).resolve())
    base_url = _str(table, "base_url")
    api_key_env = _str(table, "api_key_env")
    if kind == "attach":
        if not base_url or not re.match(r"^https?://[^\s/]+", base_url):
            raise ProfileError("an attach profile needs base_url = \"http://HOST:PORT\" of a running vLLM server")
        base_url = base_url.rstrip("/")
        if base_url.endswith("/v1"):
            base_url = base_url[:-3]
    elif base_url:
        raise ProfileError("profile.base_url belongs to kind = \"attach\"")
    if api_key_env is not None and not _ENV_NAME.match(api_key_env):
        raise ProfileError(f"profile.api_key_env must name an environment variable, not {api_key_env!r}")
    image = _str(table, "image")
    if image and kind != "docker":
        raise ProfileError("profile.image belongs to kind = \"docker\"")
    if image and (image.startswith("-") or any(c.isspace() for c in image)):
        raise ProfileError(f"profile.image {image!r} is not an image reference")
    return Profile(
        name=_str(table, "name") or kind, kind=kind, platform=platform, python=python,
        tensor_parallel_size=tp, draft_tensor_parallel_size=draft_tp, gpus=tuple(gpus),
        rocm_use_aiter=aiter, attention_backend=backend, image=image,
        docker=_str(table, "docker") or "docker", hf_cache=_str(table, "hf_cache"),
        base_url=base_url, api_key_env=api_key_env,
        env=tuple(sorted((str(k), str(v)) for k, v in env.items())),
    )


# --- saved profiles ---------------------------------------------------------------------------

def saved_path() -> Path:
    return paths.config_dir() / "profiles.toml"


def load_saved(path: Path | None = None) -> dict[str, Profile]:
    """Profiles saved by the user: {name: Profile}. A broken file is an error, not an empty list."""
    path = path or saved_path()
    if not path.exists():
        return {}
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"cannot read saved profiles {path}: {exc}") from None
    out = {}
    for name, table in doc.get("profiles", {}).items():
        try:
            out[name] = from_table({**table, "name": name})
        except ProfileError as exc:
            raise ProfileError(f"saved profile {name!r}: {exc}") from None
    return out


def save(profile: Profile, path: Path | None = None) -> Path:
    path = path or saved_path()
    profiles = load_saved(path)
    profiles[profile.name] = profile
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_saved(profiles, path)
    return path


def delete(name: str, path: Path | None = None) -> None:
    path = path or saved_path()
    profiles = load_saved(path)
    if profiles.pop(name, None) is None:
        return
    _write_saved(profiles, path)


def _write_saved(profiles: dict[str, Profile], path: Path) -> None:
    doc = {"profiles": {n: {k: v for k, v in p.to_table().items() if k != "name"} for n, p in profiles.items()}}
    paths.write_atomic(path, tomli_w.dumps(doc))


def resolve(value: Any, base: Path | None = None) -> Profile:
    """A plan's `profile`: a table, or the name of a saved profile. A plan that names none gets the
    saved profile "default" where the user made one (`gpu_setup --make-default`), else the local one."""
    if value is None:
        return load_saved().get("default", Profile())
    if isinstance(value, str):
        if value == "local":
            return Profile()
        saved = load_saved()
        if value not in saved:
            known = ", ".join(sorted(saved)) or "none saved"
            raise ProfileError(f"no saved launch profile named {value!r} (known: {known})")
        return saved[value]
    return from_table(value, base)
