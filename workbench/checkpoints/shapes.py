"""Model shapes: published targets and drafts as config files only (resources/shapes/), served by
vLLM with `--load-format dummy` so that a speculative-decoding run can be costed before any weights
are downloaded.

`folder(name)` materialises a servable folder: the shipped config files plus a generated tokenizer
whose vocabulary has exactly the config's vocab_size. Dummy weights emit any token id, so every id
must decode; the real vocabulary size is kept because the LM head is a large part of a decode step.
"""

from __future__ import annotations

from typing import Any
import hashlib
import json
import os
import shutil
import string
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from workbench import paths
from workbench.errors import DraftbenchError

ROLES = ("target", "draft")
METHODS = ("eagle3", "dflash", "dspark", "mtp")
FIELDS = {"name", "role", "repo", "sources", "notes", "method", "target", "native"}
SHIPPED_FILES = ("config.json", "generation_config.json")
MANIFEST = "draftbench-shape.json"
# Part of every folder's digest: bump it when the generated files change form, so that folders
# made by an older Draftbench are rebuilt.
GENERATOR_VERSION = 1

# The generated tokenizer is a byte-level BPE with exactly the pipeline of transformers'
# Qwen2Tokenizer (NFC, Qwen's pre-tokenizer regex, byte-level): transformers swaps its own class in
# for some model types (qwen2, which MiMo's config is) and rebuilds the tokenizer from the vocabulary
# and merges, so only this pipeline reads the same whichever class loads it. Every text encodes (no
# unknown token); every id decodes. The merges make a space plus up to three letters one token, and
# one to three lower-case letters inside a word: about 2 tokens an English word (the real BPE
# vocabularies: about 1.3), every prompt a different id sequence, so vLLM's prefix cache sees only
# the sharing real prompts have. Ids the merges do not reach are fillers (" t012345").
PRETOKENIZE_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                     r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
SPACE = "\u0120"  # the byte-level alphabet's space
LOWER = string.ascii_lowercase
# A plain role-prefixed transcript: enough for /v1/chat/completions, and it uses no special
# tokens, so it means the same for every shape.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


class ShapeError(DraftbenchError, ValueError):
    """A one-line reason a shape is unknown, malformed or cannot be materialised."""


@dataclass(frozen=True)
class Shape:
    name: str
    role: str  # "target" or "draft"
    repo: str  # the Hub repo it mirrors
    sources: tuple[str, ...]
    notes: str
    method: str | None = None  # a draft's speculative method
    target: str | None = None  # a draft's target shape
    native: tuple[str, ...] = ()  # a target's own drafting methods (native MTP layers)

    @property
    def source_dir(self) -> Path:
        return shipped_dir() / self.name

    def files(self) -> dict[str, bytes]:
        """The shipped config files, by name."""
        return {n: (self.source_dir / n).read_bytes() for n in SHIPPED_FILES if (self.source_dir / n).is_file()}

    def config(self) -> dict[str, Any]:
        return json.loads((self.source_dir / "config.json").read_text())

    @property
    def vocab_size(self) -> int:
        return vocab_size(self.config())


@dataclass(frozen=True)
class ShapePair:
    """A target shape with what drafts for it; `draft` is None for the target's own MTP layers."""
    target: str
    draft: str | None
    method: str


def shipped_dir() -> Path:
    return paths.resources_dir() / "shapes"


def default_root() -> Path:
    """Where materialised folders go, next to the demo model's."""
    return paths.models_dir() / "shapes"


def _load() -> tuple[Shape, ...]:
    doc = tomllib.loads((shipped_dir() / "shapes.toml").read_text())
    shapes = tuple(_parse(entry) for entry in doc.get("shape", []))
    by_name = {s.name: s for s in shapes}
    if len(by_name) != len(shapes):
        raise ShapeError("shapes.toml names a shape twice")
    for s in shapes:
        target = by_name.get(s.target) if s.target is not None else None
        if s.role == "draft" and (target is None or target.role != "target"):
            raise ShapeError(f"draft shape {s.name} names {s.target!r}, which is not a target shape")
    return shapes


def _parse(entry: dict[str, Any]) -> Shape:
    name = entry.get("name", "?")
    unknown = set(entry) - FIELDS
    if unknown:
        raise ShapeError(f"shape {name}: unknown field(s) {', '.join(sorted(unknown))}")
    if entry.get("role") not in ROLES:
        raise ShapeError(f"shape {name}: role must be one of {', '.join(ROLES)}")
    if entry["role"] == "draft" and (entry.get("method") not in METHODS or not entry.get("target")):
        raise ShapeError(f"draft shape {name} needs a method ({', '.join(METHODS)}) and a target")
    if entry["role"] == "target" and (entry.get("method") or entry.get("target")):
        raise ShapeError(f"target shape {name} takes `native` methods, not a method or target")
    if any(m not in METHODS for m in entry.get("native", [])):
        raise ShapeError(f"shape {name}: native methods must be among {', '.join(METHODS)}")
    if not entry.get("sources") or not entry.get("repo"):
        raise ShapeError(f"shape {name} must cite its repo and at least one source")
    shape = Shape(name, entry["role"], entry["repo"], tuple(entry["sources"]), entry.get("notes", "").strip(),
                  entry.get("method"), entry.get("target"), tuple(entry.get("native", ())))
    if not (shape.source_dir / "config.json").is_file():
        raise ShapeError(f"shape {name} has no config.json in {shape.source_dir}")
    return shape


ALL: tuple[Shape, ...] = _load()


def names() -> list[str]:
    return [s.name for s in ALL]


def get(name: str) -> Shape:
    for s in ALL:
        if s.name == name:
            return s
    raise ShapeError(f"no shape named {name!r}; known: {', '.join(names())}")


def pairs() -> list[ShapePair]:
    """Every (target, draft, method) the shipped shapes make, native MTP included."""
    out = [ShapePair(s.name, None, m) for s in ALL if s.role == "target" for m in s.native]
    # A draft shape always names its target and method (_parse refuses one that does not).
    out += [ShapePair(s.target, s.name, s.method) for s in ALL if s.role == "draft" and s.target and s.method]
    return out


def vocab_size(config: dict[str, Any]) -> int:
    size = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
    if not isinstance(size, int) or size <= 0:
        raise ShapeError("the config has no vocab_size")
    return size


# --- materialising ---------------------------------------------------------------------------------
def folder(name: str, root: Path | None = None) -> Path:
    """A servable folder for the shape: made once, remade only when the shipped files (or this
    generator) change; written to a temporary folder and renamed, so a crash never leaves a half one."""
    shape = get(name)
    dest = Path(root or default_root()) / shape.name
    staging = None
    try:
        files = shape.files()
        digest = _digest(files)
        if _current(dest, digest):
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        _sweep(dest)
        staging = Path(tempfile.mkdtemp(prefix=f".{shape.name}.", dir=dest.parent))
        _write(shape, files, digest, staging)
        staging.chmod(0o755)  # mkdtemp makes it private; a server under another user must read it
        _swap(staging, dest, digest)
    except OSError as exc:
        raise ShapeError(f"cannot write shape {name} into {dest.parent}: {exc.strerror or exc}") from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return dest


def _digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256(f"generator {GENERATOR_VERSION}\n".encode())
    for n in sorted(files):
        h.update(f"{n} {len(files[n])}\n".encode())
        h.update(files[n])
    return h.hexdigest()


def _current(dest: Path, digest: str) -> bool:
    try:
        meta = json.loads((dest / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return meta.get("digest") == digest and all((dest / n).is_file() for n in meta.get("files", []))


def _swap(staging: Path, dest: Path, digest: str) -> None:
    if _current(dest, digest):  # another process materialised it meanwhile
        return
    old = None
    try:
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
            os.replace(dest, old / dest.name)
        os.rename(staging, dest)
    except OSError:
        # Another process materialising the same shape got there first.
        if not _current(dest, digest):
            raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _sweep(dest: Path, age_s: float = 3600) -> None:
    """Removes temporary folders that a killed process left behind (an hour old: never a live one)."""
    now = time.time()
    for stale in dest.parent.glob(f".{dest.name}.*"):
        try:
            if now - stale.stat().st_mtime > age_s:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass


def _write(shape: Shape, files: dict[str, bytes], digest: str, out: Path) -> None:
    config = json.loads(files["config.json"])
    generation = json.loads(files["generation_config.json"]) if "generation_config.json" in files else {}
    for n, data in files.items():
        if n == "config.json" and "transformers_version" not in config:
            # transformers takes a local config.json without a version for an old Mistral
            # tokenizer's and warns about a broken regex on every load; any version stops that.
            data = (json.dumps(dict(config, transformers_version="5.0.0"), indent=2, sort_keys=True) + "\n").encode()
        (out / n).write_bytes(data)
    tokenizer, settings = tokenizer_files(config, generation)
    (out / "tokenizer.json").write_text(tokenizer)
    (out / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    written = sorted(p.name for p in out.iterdir())
    # Last: a folder with a manifest is complete.
    (out / MANIFEST).write_text(json.dumps({"name": shape.name, "repo": shape.repo, "digest": digest,
                                            "vocab_size": vocab_size(config), "files": written}, indent=2) + "\n")


def special_ids(config: dict[str, Any], generation: dict[str, Any] | None = None) -> tuple[dict[int, str], dict[str, str]]:
    """Token names for the ids the configs give special roles, and the name each role takes:
    ({id: name}, {"bos" | "eos" | "pad": name}). The first id seen for a role names it (<eos>);
    further ids get their number (<eos:128008>); an id with two roles keeps its first name."""
    names: dict[int, str] = {}
    roles: dict[str, str] = {}
    for doc in (config, config.get("text_config") or {}, generation or {}):
        for role in ("eos", "bos", "pad"):
            value = doc.get(f"{role}_token_id")
            for token_id in value if isinstance(value, list) else [value]:
                if not isinstance(token_id, int) or isinstance(token_id, bool):
                    continue
                if token_id not in names:
                    names[token_id] = f"<{role}>" if role not in roles else f"<{role}:{token_id}>"
                roles.setdefault(role, names[token_id])
    return names, roles


def tokenizer_files(config: dict[str, Any], generation: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """tokenizer.json (as text) and tokenizer_config.json (as a dict) for a config: a byte-level BPE
    of exactly vocab_size ids, with the config's special ids at their places."""
    try:
        # Deferred: only materialising needs it (vLLM, and so every served folder, depends on it).
        from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    except ImportError:
        raise ShapeError("generating a shape's tokenizer needs the `tokenizers` package (pip install tokenizers)") from None
    size = vocab_size(config)
    named, roles = special_ids(config, generation)
    specials = {i: n for i, n in named.items() if 0 <= i < size}
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = _merges()
    learnt = iter(alphabet + [a + b for a, b in merges])
    vocab: dict[str, int] = {}
    for i in range(size):
        # Fillers hold digits, which no merge makes, so they never collide with a learnt token.
        vocab[specials.get(i) or next(learnt, None) or f"{SPACE}t{i:06d}"] = i
    if len(vocab) != size or next(learnt, None) is not None:
        raise ShapeError(f"a vocabulary of {size} ids is too small for the generated tokenizer")
    tok = Tokenizer(models.BPE(vocab, merges, continuing_subword_prefix="", end_of_word_suffix="",
                               fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(n, special=True, normalized=False) for n in specials.values()])
    text = config.get("text_config") or config
    settings = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **{f"{role}_token": name for role, name in roles.items() if name in specials.values()},
        # Byte-level BPE has no unknowns; a class that supplies defaults must not add tokens.
        "unk_token": None,
        "model_max_length": text.get("max_position_embeddings") or config.get("max_position_embeddings") or 4096,
        "clean_up_tokenization_spaces": False,
        "add_prefix_space": False,
        "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {str(i): {"content": n, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": True} for i, n in sorted(specials.items())},
    }
    settings.setdefault("pad_token", settings.get("eos_token"))
    settings.setdefault("bos_token", None)
    return tok.to_str(), settings


def _merges() -> list[tuple[str, str]]:
    """In rank order: a space with one to three letters first (so a word's start becomes one
    token), then lower-case pairs and triples inside words."""
    starts = [SPACE + c for c in string.ascii_letters]
    merges = [(SPACE, c) for c in string.ascii_letters + string.punctuation]
    merges += [(a, b) for a in starts for b in LOWER]
    merges += [(a + b, c) for a in starts for b in LOWER for c in LOWER]
    merges += [(a, b) for a in LOWER for b in LOWER]
    merges += [(a + b, c) for a in LOWER for b in LOWER for c in LOWER]
    return merges

