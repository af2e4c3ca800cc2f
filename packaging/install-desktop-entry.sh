#!/usr/bin/env bash
# Installs Draftbench's menu entry, icons and AppStream metadata for the current user, pointing at
# this bundle. Run it from the unpacked bundle folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
res="$here/_internal/resources"
id=io.github.draftbench.Draftbench
mkdir -p "$data/applications" "$data/metainfo" "$data/icons/hicolor/scalable/apps"
sed "s#^Exec=draftbench#Exec=$here/draftbench#" "$res/desktop/$id.desktop" > "$data/applications/$id.desktop"
cp "$res/desktop/$id.metainfo.xml" "$data/metainfo/"
cp "$res/icons/draftbench.svg" "$data/icons/hicolor/scalable/apps/$id.svg"
for size in 16 32 48 64 128 256; do
  mkdir -p "$data/icons/hicolor/${size}x${size}/apps"
  cp "$res/icons/draftbench-$size.png" "$data/icons/hicolor/${size}x${size}/apps/$id.png"
done
echo "installed $id into $data"
