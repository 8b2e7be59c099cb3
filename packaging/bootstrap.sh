#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The script behind the README's two commands, for a fresh Debian 12 machine (as root, or with sudo):
#   bash packaging/bootstrap.sh run    install packages, build, run the main job on the embedded default
#   bash packaging/bootstrap.sh test   install packages, build everything, run every test, test the .deb packages,
#                                      the threaded tests under TSan, and fuzz every loader
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config
          qt6-base-dev qt6-charts-dev qt6-svg-dev
          libcli11-dev nlohmann-json3-dev libboost-graph-dev libtbb-dev coinor-libcbc-dev libtomlplusplus-dev
          libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
          xvfb xauth
          dpkg-dev file desktop-file-utils appstream
          clang)

install_packages() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "Installing Debian packages: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}"
}

jobs=$(nproc 2>/dev/null || echo 2)

case "${1:-}" in
run)
    install_packages
    cmake --preset release >/dev/null
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
        # The desktop app opens with the embedded default (llama2-7b on 1 node x 8 h100-sxm) already planned.
        cmake --build --preset release --target shardscape -- -j"$jobs"
        exec ./build/release/app/gui/shardscape
    fi
    echo "No display (DISPLAY and WAYLAND_DISPLAY are unset): running the CLI planner on the embedded default instead."
    cmake --build --preset release --target shardscape-cli -- -j"$jobs"
    exec ./build/release/app/cli/shardscape-cli plan --model llama2-7b --cluster h100-sxm
    ;;
test)
    install_packages
    cmake --preset ci
    cmake --build --preset ci -- -j"$jobs"
    ctest --preset ci -j"$jobs"
    # The .deb packages from the same tree, installed, run and removed (skipped without root or sudo).
    bash packaging/package_test.sh build/ci
    # The threaded search and the GUI's background jobs under ThreadSanitizer.
    bash tests/sanitizers/ci_tsan.sh
    # The libFuzzer targets (clang, ASan + UBSan) replay their seeds and every committed crash input, then fuzz
    # each loader for 30 s.
    bash tests/fuzz/ci_replay.sh build/fuzz-ci
    ;;
*)
    echo "usage: bash packaging/bootstrap.sh run|test" >&2
    exit 2
    ;;
esac
