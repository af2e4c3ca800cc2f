"""Checkpoints for the compatibility checks without weights: the published configs kept under
tests/fixtures/configs, and safetensors files that are a header only."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from workbench.checkpoints import compat

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "configs"


def cp(name: str) -> compat.Checkpoint:
    return compat.load(str(CONFIGS / name))


def write_header_only_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """Just the header: the checks never read past it, so no weights are needed."""
    offset, header = 0, {}
    for name, (dtype, shape) in tensors.items():
        size = 2
        for d in shape:
            size *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    data = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(data)) + data)
