#!/usr/bin/env bash
# Converts every library module's DocC catalog with the toolchain's `docc`, over the symbol graphs
# of the debug build, and fails when any of them has a warning (a broken link, a parameter left
# undocumented, a name DocC cannot resolve) or an error.
#   scripts/docs.sh [--server] [--output DIR]
# --server also converts the server package's modules (FlatlandServer, FlatlandServerTesting) and
# the AsyncHTTPClient transport's (FlatlandAsyncHTTPClient, in Transports/AsyncHTTPClient, built in
# Server/'s build folder, which already holds it as a dependency of the server package): that
# builds Server/ in debug first. The archives go to DIR (default .build/docs), one
# <Module>.doccarchive each; `docc preview` or any static host serves them.
# SWIFT_FLAGS (e.g. "-Xswiftc -warnings-as-errors") is passed to the build, so that a build with
# the same flags just before is reused rather than redone.
set -euo pipefail
cd "$(dirname "$0")/.."
# The same plan flags as make test's builds of Server/'s build folder (see BUILD in the Makefile:
# SwiftPM orders trait flags by a Set's random order unless hashing is deterministic), so that
# make test reuses this build instead of compiling Hummingbird again.
export SWIFT_DETERMINISTIC_HASHING=1

LIBRARIES=(FlatlandJSON Flatland FlatlandSQLite FlatlandHTTP FlatlandSync FlatlandFixtures)
SERVER_MODULES=(FlatlandServer FlatlandServerTesting)
TRANSPORT_MODULES=(FlatlandAsyncHTTPClient)
output=.build/docs
server=0
while [ $# -gt 0 ]; do
    case "$1" in
        --server) server=1 ;;
        --output) output="$2"; shift ;;
        *) echo "usage: scripts/docs.sh [--server] [--output DIR]" >&2; exit 2 ;;
    esac
    shift
done
read -r -a flags <<<"${SWIFT_FLAGS:-}"
DOCC="${DOCC:-$(command -v docc || true)}"
[ -n "$DOCC" ] || { echo "docs: no docc on PATH (it ships with the Swift toolchain)" >&2; exit 2; }

mkdir -p "$output"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The symbol graphs of one package's modules, extension blocks included (members that a module
# adds to another module's types are documented too).
symbol_graphs() { # package-path [scratch-path]
    local log="$work/symbolgraph-$(basename "$(cd "$1" && pwd)").log"
    local scratch=()
    [ -n "${2:-}" ] && scratch=(--scratch-path "$2")
    # dump-symbol-graph also tries the package's synthesized test modules (<Package>PackageTests,
    # <Package>PackageDiscoveredTests), which exist only once the tests were built: on a fresh clone
    # it fails for those alone. Any other error fails the docs.
    if ! swift package --package-path "$1" "${scratch[@]}" "${flags[@]}" dump-symbol-graph \
        --emit-extension-block-symbols >"$log" 2>&1; then
        if grep '^error:' "$log" | grep -qv "^error: Failed to emit symbol graph for '[A-Za-z]*Package\(Discovered\)\{0,1\}Tests'"; then
            cat "$log" >&2
            echo "docs: the symbol graphs of $1 did not build" >&2
            exit 1
        fi
    fi
    sed -n 's/^Files written to //p' "$log" | tail -1
}

failures=0
convert() { # module catalog symbol-graph-dir
    local module="$1" catalog="$2" graphs="$3" dir="$work/graphs/$1" log="$work/$1.log"
    mkdir -p "$dir"
    if [ ! -e "$graphs/$module.symbols.json" ]; then
        echo "docs: $module: no symbol graph in $graphs" >&2
        failures=$((failures + 1))
        return
    fi
    cp "$graphs/$module.symbols.json" "$dir/"
    for extra in "$graphs/$module"@*.symbols.json; do
        [ -e "$extra" ] && cp "$extra" "$dir/"
    done
    local status=0
    local inputs=()
    [ -d "$catalog" ] && inputs=("$catalog") # a module with no catalog: its symbols alone
    "$DOCC" convert "${inputs[@]}" --additional-symbol-graph-dir "$dir" \
        --output-dir "$output/$module.doccarchive" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.flatland.$module" \
        >"$log" 2>&1 || status=$?
    local warnings errors
    warnings=$(grep -c '^warning:' "$log" || true)
    errors=$(grep -c '^error:' "$log" || true)
    if [ "$status" -ne 0 ] || [ "$warnings" -gt 0 ] || [ "$errors" -gt 0 ]; then
        grep -v '^Finished building\|^Generated documentation archive at' "$log" >&2 || true
        echo "docs: $module: $warnings warning(s), $errors error(s), docc exit $status" >&2
        failures=$((failures + 1))
    else
        echo "docs: $module: no warnings"
    fi
}

graphs=$(symbol_graphs .)
for module in "${LIBRARIES[@]}"; do
    convert "$module" "Sources/$module/Documentation.docc" "$graphs"
done
if [ "$server" = 1 ]; then
    graphs=$(symbol_graphs Server)
    for module in "${SERVER_MODULES[@]}"; do
        convert "$module" "Server/Sources/$module/Documentation.docc" "$graphs"
    done
    # Server/'s build plan is replaced by the transport package's: drop it, so that the next
    # `swift test --package-path Server --skip-build` plans again instead of running this one's.
    graphs=$(symbol_graphs Transports/AsyncHTTPClient Server/.build)
    rm -f Server/.build/debug/description.json
    for module in "${TRANSPORT_MODULES[@]}"; do
        convert "$module" "Transports/AsyncHTTPClient/Sources/$module/Documentation.docc" "$graphs"
    done
fi

if [ "$failures" -gt 0 ]; then
    echo "docs: $failures catalog(s) with warnings or errors" >&2
    exit 1
fi
echo "docs: every catalog converted with no warnings (archives in $output)"
