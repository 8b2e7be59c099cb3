#!/bin/sh
# SPDX-License-Identifier: MIT
# The desktop app's eight-task walkthrough under a real X server (Xvfb), at 1280x720 and 1920x1080; the photographs
# land in OUT_DIR as <size>-<step>.png. Exits non-zero when a step does not hold.
#
#   tests/ui/walkthrough.sh [WALKTHROUGH_BINARY] [OUT_DIR]
#   (default: build/ci/tests/ui/shardscape_walkthrough, walkthrough/)
set -eu
binary=${1:-build/ci/tests/ui/shardscape_walkthrough}
out=${2:-walkthrough}
if ! command -v xvfb-run >/dev/null 2>&1; then
    echo "walkthrough.sh: xvfb-run is missing (apt-get install -y xvfb xauth)" >&2
    exit 2
fi
if [ ! -x "$binary" ]; then
    echo "walkthrough.sh: $binary is not built (cmake --build --preset ci)" >&2
    exit 2
fi
mkdir -p "$out"
for size in 1280x720 1920x1080; do
    # The real X11 platform, whatever the caller's environment says.
    env -u QT_QPA_PLATFORM xvfb-run -a -s "-screen 0 1920x1080x24" "$binary" --size "$size" --out "$out"
done
