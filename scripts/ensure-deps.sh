#!/usr/bin/env bash
# Makes sure the C libraries Flatland builds against are present (libyajl, and SQLite for the
# persistence module); installs them if not.
set -euo pipefail

have_yajl() {
    pkg-config --exists yajl 2>/dev/null || return 1
    local inc
    inc=$(pkg-config --variable=includedir yajl 2>/dev/null)
    [ -f "$inc/yajl_parse.h" ] || [ -f "$inc/yajl/yajl_parse.h" ]
}
have_sqlite() { [ "$(uname)" = "Darwin" ] || [ -f /usr/include/sqlite3.h ]; }

if have_yajl && have_sqlite; then
    exit 0
fi

echo "libyajl or SQLite development files are missing: installing them." >&2
if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
            echo "error: need root or sudo to run: apt-get install -y libyajl-dev libsqlite3-dev pkg-config" >&2
            exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq libyajl-dev libsqlite3-dev pkg-config >/dev/null
elif command -v brew >/dev/null 2>&1; then
    brew install yajl pkg-config
else
    echo "error: cannot install libyajl here: install it yourself (Debian/Ubuntu: libyajl-dev libsqlite3-dev, Homebrew: yajl)." >&2
    exit 1
fi

have_yajl || { echo "error: libyajl still not found by pkg-config after installing" >&2; exit 1; }
