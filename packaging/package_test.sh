#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The packages as a user gets them: builds the .deb packages (and the .tar.gz) from an already built tree without
# rebuilding, installs them with apt, runs the installed programs on the embedded default, then removes them.
#   bash packaging/package_test.sh [BUILD_DIR]     (default build/ci; needs root or password-less sudo)
# Skips, saying why, when it cannot install packages or when a Shardscape package is already installed (a user's
# own installation is neither replaced nor removed).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
packages=(shardscape-cli shardscape)

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
    else
        echo "Package test SKIPPED: installing .deb packages needs root or password-less sudo."
        exit 0
    fi
fi
for p in "${packages[@]}"; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        echo "Package test SKIPPED: $p is already installed here; it is neither replaced nor removed."
        exit 0
    fi
done
[ -f "$build/CPackConfig.cmake" ] || { echo "$build is not a configured build tree (no CPackConfig.cmake)" >&2; exit 2; }

fail() { echo "Package test FAILED: $*" >&2; exit 1; }
# Quiet unless it fails: then its whole output, to see why.
quiet() {
    local log
    log=$(mktemp)
    "$@" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; fail "$*"; }
    rm -f "$log"
}

rm -rf "$build/packages"
quiet cpack --config "$build/CPackConfig.cmake" -G "DEB;TGZ" -B "$build/packages"
debs=("$build"/packages/*.deb)
echo "Built: $(cd "$build/packages" && ls -- *.deb *.tar.gz | tr '\n' ' ')"
for deb in "${debs[@]}"; do
    echo "  $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done

remove() { DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get remove -y -q "${packages[@]}" >/dev/null 2>&1 || true; }
trap remove EXIT
quiet "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]/#/./}"

out=$(/usr/bin/shardscape-cli plan --model llama2-7b --cluster h100-sxm) || fail "the installed shardscape-cli plan exited $?"
grep -q "^Planning llama2-7b" <<<"$out" && grep -q "^selected configuration" <<<"$out" \
    || fail "the installed shardscape-cli plan printed no plan for llama2-7b: $out"
if dpkg-query -W -f='${Status}' shardscape 2>/dev/null | grep -q "install ok installed"; then
    quiet env QT_QPA_PLATFORM=offscreen /usr/bin/shardscape --version
    for f in /usr/share/applications/io.github.shardscape.Shardscape.desktop \
             /usr/share/metainfo/io.github.shardscape.Shardscape.metainfo.xml \
             /usr/share/icons/hicolor/scalable/apps/io.github.shardscape.Shardscape.svg; do
        [ -f "$f" ] || fail "$f is not installed"
    done
fi
remove
trap - EXIT
for p in "${packages[@]}"; do
    ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || fail "$p is still installed"
done
[ ! -e /usr/bin/shardscape-cli ] || fail "/usr/bin/shardscape-cli is still there after removal"
echo "Package test passed: installed, ran shardscape-cli plan, removed."
