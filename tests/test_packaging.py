"""The desktop bundle (PyInstaller, one folder) and the desktop metadata, checked for real."""

import os
import shutil
import subprocess
import tarfile

import pytest

from helpers.recorded import ROOT

DESKTOP = ROOT / "resources" / "desktop" / "io.github.draftbench.Draftbench.desktop"
METAINFO = ROOT / "resources" / "desktop" / "io.github.draftbench.Draftbench.metainfo.xml"


def test_desktop_entry_validates():
    done = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert done.returncode == 0 and "error" not in done.stdout.lower(), done.stdout


def test_appstream_metainfo_validates():
    done = subprocess.run(["appstreamcli", "validate", "--no-net", str(METAINFO)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation was successful" in done.stdout


# The PyInstaller build takes about 4 minutes of CPU on 2 cores: its tests are in the slow tier.
@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run(["bash", str(ROOT / "packaging" / "build.sh")], capture_output=True, text=True,
                          env={**os.environ, "DRAFTBENCH_DIST": str(dist)}, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "built " in done.stdout
    return dist


@pytest.mark.build
def test_bundle_answers_version_and_info_without_qt(bundle):
    exe = bundle / "draftbench" / "draftbench"
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "draftbench 0.1.0"
    info = subprocess.run([str(exe), "--info"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "QT_QPA_PLATFORM": "none-such"})
    assert info.returncode == 0 and "qt (PySide6)" in info.stdout and "6.10.3" in info.stdout


@pytest.mark.build
def test_bundle_opens_the_main_window_offscreen(bundle):
    exe = bundle / "draftbench" / "draftbench"
    done = subprocess.run([str(exe), "gui", "--smoke-test"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "main window: Draftbench 0.1.0 visible=True tabs=Experiment,Live,History,Compare" in done.stdout


@pytest.mark.build
def test_bundle_tarball_and_desktop_entry_install(bundle, tmp_path):
    tarball = next(bundle.glob("draftbench-0.1.0-linux-*.tar.gz"))
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    assert "draftbench/draftbench" in names and "draftbench/install-desktop-entry.sh" in names
    data = tmp_path / "share"
    done = subprocess.run(["bash", str(bundle / "draftbench" / "install-desktop-entry.sh")], capture_output=True,
                          text=True, env={**os.environ, "XDG_DATA_HOME": str(data)})
    assert done.returncode == 0, done.stderr
    installed = data / "applications" / "io.github.draftbench.Draftbench.desktop"
    assert f"Exec={bundle / 'draftbench' / 'draftbench'}" in installed.read_text()
    assert subprocess.run(["desktop-file-validate", str(installed)]).returncode == 0
    assert (data / "icons" / "hicolor" / "256x256" / "apps" / "io.github.draftbench.Draftbench.png").exists()
    assert shutil.which("appstreamcli") is not None
