"""Hub downloads through huggingface_hub itself, against tests/helpers/hub.py: a local stand-in for the
Hugging Face Hub, which this machine cannot reach. Files are made here; the cache is a tmp HF_HOME."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers.hub import BIG, CONFIG_FILES, GRANTED, WEIGHT_SUFFIXES, add_full_repo, weight_files_in_cache
from workbench.checkpoints import hub, hub_api

def _sha(data: bytes | Path) -> str:
    return hashlib.sha256(data.read_bytes() if isinstance(data, Path) else data).hexdigest()


def _cli(*args, env_extra=None, **kw):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-m", "workbench.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_search_and_size_before_download(stand_in):
    hits = hub_api.search("acme")
    assert [h.repo for h in hits] == ["acme/big-target", "acme/tiny-draft"]  # most downloaded first
    info = hub_api.remote("acme/big-target")
    assert info.size == BIG + len(b'{"model_type": "llama"}')
    assert not stand_in.gets("/cdn/")  # sizes come from metadata, no file was fetched
    done = _cli("pull", "acme/big-target", "--dry-run")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert "41.9 MB  in all" in out and "model.safetensors" in out
    assert not (Path(os.environ["HF_HOME"]) / "hub" / "models--acme--big-target" / "snapshots").exists()


def test_download_reports_progress_and_lands_in_the_shared_cache(stand_in):
    from huggingface_hub import try_to_load_from_cache

    seen: list[tuple[int, int]] = []
    folder = hub.Download("acme/big-target", progress=lambda d, t, f: seen.append((d, t))).run()
    assert _sha(folder / "model.safetensors") == _sha(stand_in.repos["acme/big-target"].files["model.safetensors"])
    total = seen[-1][1]
    assert seen[-1][0] == total and len({d for d, _ in seen}) >= 4
    assert all(b >= a for (a, _), (b, _) in zip(seen, seen[1:]))  # never goes backwards
    # huggingface_hub (and so vLLM) finds it in its own cache, no network needed.
    cached = try_to_load_from_cache("acme/big-target", "model.safetensors", cache_dir=hub_api.cache_dir())
    assert cached and Path(cached).resolve() == (folder / "model.safetensors").resolve()
    [row] = hub.cached()
    assert row.repo == "acme/big-target" and row.size == total and row.refs == ("main",) and row.partial == 0


def test_cancel_from_another_thread_then_resume(stand_in):
    stand_in.delay_s = 0.004
    seen: list[int] = []
    d = hub.Download("acme/big-target", progress=lambda done, t, f: seen.append(done))
    outcome: dict = {}

    def work():
        try:
            outcome["folder"] = d.run()
        except hub_api.HubError as exc:
            outcome["error"] = exc

    t = threading.Thread(target=work)
    t.start()
    deadline = time.monotonic() + 60
    while (not seen or seen[-1] < 10 * 1024 * 1024) and time.monotonic() < deadline:
        time.sleep(0.05)
    d.cancel()
    t.join(timeout=30)
    assert not t.is_alive(), "the download did not stop after cancel"
    assert isinstance(outcome.get("error"), hub.Cancelled) and "resume" in str(outcome["error"])
    [row] = hub.cached()
    assert 0 < row.partial < BIG and not row.revisions

    stand_in.delay_s = 0.0
    folder = hub.Download("acme/big-target").run()
    assert _sha(folder / "model.safetensors") == _sha(stand_in.repos["acme/big-target"].files["model.safetensors"])
    resumed = [r for r in stand_in.gets("/cdn/") if r["range"]]
    assert resumed and resumed[-1]["range"] == f"bytes={row.partial}-"
    assert hub.cached()[0].partial == 0


def test_resume_after_the_downloading_process_is_killed(stand_in):
    stand_in.delay_s = 0.004
    blobs = Path(os.environ["HF_HOME"]) / "hub" / "models--acme--big-target" / "blobs"
    proc = _cli("pull", "acme/big-target", start_new_session=True)
    deadline = time.monotonic() + 120
    partial = None
    while time.monotonic() < deadline and proc.poll() is None:
        # Every partial file, by size: a small file's partial is renamed as soon as it completes,
        # so one seen by the glob may be gone by the time it is measured.
        for p in blobs.glob("*.incomplete") if blobs.exists() else []:
            try:
                big = p.stat().st_size >= 10 * 1024 * 1024
            except FileNotFoundError:
                continue
            if big:
                partial = p
                break
        if partial is not None:
            break
        time.sleep(0.05)
    assert partial is not None, f"no partial download appeared: {proc.communicate()[1] if proc.poll() is not None else ''}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    kept = partial.stat().st_size
    assert 0 < kept < BIG

    stand_in.delay_s = 0.0
    again = _cli("pull", "acme/big-target")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    folder = Path(out.strip().splitlines()[-1])
    data = stand_in.repos["acme/big-target"].files["model.safetensors"]
    assert _sha(folder / "model.safetensors") == _sha(data)
    ranges = [r["range"] for r in stand_in.gets("/cdn/") if r["range"]]
    assert ranges and int(ranges[-1].removeprefix("bytes=").rstrip("-")) >= kept
    assert not list(blobs.glob("*.incomplete"))


def test_gated_repo_answers_401_then_403_and_is_explained(stand_in, monkeypatch):
    with pytest.raises(hub_api.GatedError) as no_token:
        hub.Download("google/gated-assistant").run()
    assert no_token.value.url == f"{stand_in.url}/google/gated-assistant"
    assert "no Hugging Face token is set" in str(no_token.value)
    assert stand_in.requests[-1]["auth"] is False

    monkeypatch.setenv("HF_TOKEN", "hf_" + "notgranted" * 3)
    with pytest.raises(hub_api.GatedError) as not_granted:
        hub_api.remote("google/gated-assistant")
    assert "has not been granted access" in str(not_granted.value) and stand_in.requests[-1]["auth"] is True

    done = _cli("pull", "google/gated-assistant")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 2 and "is gated: accept its licence at" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err

    monkeypatch.setenv("HF_TOKEN", GRANTED)
    assert hub_api.token_present()
    folder = hub.Download("google/gated-assistant").run()
    assert (folder / "model.safetensors").is_file()
    # The token goes to the Hub in a header and nowhere else.
    for path in Path(os.environ["HF_HOME"]).rglob("*"):
        if path.is_file():
            assert GRANTED.encode() not in path.read_bytes(), path


def test_free_disk_is_checked_before_any_byte(stand_in, monkeypatch):
    monkeypatch.setattr(hub, "free_bytes", lambda path: 1024 * 1024)
    with pytest.raises(hub_api.HubError, match=r"needs 41\.9 MB more in .*only 1\.0 MB is free"):
        hub.Download("acme/big-target").run()
    assert not stand_in.gets("/resolve/") and not stand_in.gets("/cdn/")


def test_offline_mode_uses_the_cache_only(stand_in, monkeypatch):
    hub.Download("acme/tiny-draft").run()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(stand_in.requests)
    folder = hub.Download("acme/tiny-draft").run()
    assert (folder / "config.json").is_file() and len(stand_in.requests) == before
    with pytest.raises(hub_api.HubError, match="not in the Hugging Face cache"):
        hub.Download("acme/big-target").run()
    with pytest.raises(hub_api.HubError, match="offline mode is on"):
        hub_api.search("acme")


def test_cli_lists_and_deletes_the_cache(stand_in):
    hub.Download("acme/tiny-draft").run()
    listing = _cli("models")
    out, err = listing.communicate(timeout=60)
    assert listing.returncode == 0, err
    assert "acme/tiny-draft" in out and "3.1 MB" in out and "token: not set" in out
    gone = _cli("models", "--delete", "acme/tiny-draft")
    out, err = gone.communicate(timeout=60)
    assert gone.returncode == 0 and "3.1 MB freed" in out
    assert hub.cached() == []
    missing = _cli("models", "--delete", "acme/tiny-draft")
    _, err = missing.communicate(timeout=60)
    assert missing.returncode == 2 and "is not in the Hugging Face cache" in err


def test_config_only_patterns_match_no_weight_file():
    for suffix in WEIGHT_SUFFIXES:
        assert not any(hub_api._wanted(f"sub/model-00001{suffix}", [p]) for p in hub.CONFIG_PATTERNS), suffix
    assert all(hub_api._wanted(name, hub.CONFIG_PATTERNS) for name in CONFIG_FILES)


def test_pull_config_only_fetches_no_weights_and_prints_the_sizes(stand_in):
    repo = add_full_repo(stand_in)
    config_bytes = sum(len(v) for v in CONFIG_FILES.values())
    total = sum(len(v) for v in repo.files.values())
    done = _cli("pull", "--config-only", "acme/full-target")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    folder = Path(out.strip().splitlines()[-1])
    assert sorted(p.name for p in folder.rglob("*") if p.is_file()) == sorted(CONFIG_FILES)
    assert weight_files_in_cache("acme/full-target") == []
    assert not stand_in.gets("/cdn/")  # no LFS file was ever asked for
    line = f"config only: {hub.human(config_bytes)} of {hub.human(total)} ({len(CONFIG_FILES)} of {len(repo.files)} files)"
    assert line in err, err

    dry = _cli("pull", "--config-only", "--dry-run", "acme/full-target")
    out, err = dry.communicate(timeout=60)
    assert dry.returncode == 0, err
    listed = [row.split()[-1] for row in out.splitlines()[:-2]]
    assert line in out and sorted(listed) == sorted(CONFIG_FILES)

    # The weights come later with a plain pull, on top of the configs already cached.
    folder = hub.Download("acme/full-target").run()
    assert (folder / "model-00002-of-00002.safetensors").is_file()


def test_pull_config_only_of_a_gated_repo_is_explained(stand_in):
    done = _cli("pull", "--config-only", "google/gated-assistant")
    _, err = done.communicate(timeout=60)
    assert done.returncode == 2 and "is gated: accept its licence at" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
