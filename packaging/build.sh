#!/usr/bin/env bash
# Builds the desktop bundle: dist/draftbench/ (one folder) and dist/draftbench-VERSION-linux-ARCH.tar.gz.
#   bash packaging/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${DRAFTBENCH_DIST:-dist}
bash scripts/bootstrap.sh setup
version=$(.venv/bin/python -c "import workbench; print(workbench.__version__)")
start=$(date +%s)
.venv/bin/python -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$DIST" --workpath build/pyinstaller packaging/draftbench.spec
cp packaging/install-desktop-entry.sh "$DIST/draftbench/"
tarball="$DIST/draftbench-$version-linux-$(uname -m).tar.gz"
tar -C "$DIST" -czf "$tarball" draftbench
echo "built $tarball ($(du -h "$tarball" | cut -f1), folder $(du -sh "$DIST/draftbench" | cut -f1)) in $(( $(date +%s) - start )) s"
