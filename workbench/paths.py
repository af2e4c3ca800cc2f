"""Where Draftbench keeps its data, models and results (platformdirs, overridable for tests)."""

import os
from pathlib import Path

import platformdirs

import resources

APP = "draftbench"


def data_dir() -> Path:
    override = os.environ.get("DRAFTBENCH_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP))


def config_dir() -> Path:
    override = os.environ.get("DRAFTBENCH_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP))


def cache_dir() -> Path:
    """What can be asked again if lost: the answers of probes of the vLLM in a docker image."""
    override = os.environ.get("DRAFTBENCH_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP))


def models_dir() -> Path:
    return data_dir() / "models"


def default_db() -> Path:
    return data_dir() / "results.sqlite"


def logs_dir() -> Path:
    """Log files: a remote host's detached sweeps, and the tracebacks `draftbench --debug` keeps."""
    return data_dir() / "logs"


def write_atomic(path: Path, text: str) -> None:
    """Writes under a temporary name and renames: a reader never sees a half-written file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_new(path: Path, text: str) -> None:
    """Writes a file that must not exist yet: FileExistsError if it does (never overwrites, even
    when another writer creates it between a check and the write)."""
    with open(path, "x", encoding="utf-8") as f:
        f.write(text)


def resources_dir() -> Path:
    return Path(resources.__file__).parent
