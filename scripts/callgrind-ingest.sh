#!/usr/bin/env bash
# Instructions per byte of one typed ingest (Store.ingest into a new store, torn down), counted by
# callgrind: repeatable where wall time is not, so a change to the ingest path is compared with
# its base by this figure.
#   scripts/callgrind-ingest.sh [DATA_DIR]   (default ../shared/data/json; seed-1MB and pull-page, a pull's page of 50 rows, are generated)
# FLATLAND_CALLGRIND_MODES="ingest parse yajl" counts the typed ingest, the strict parse alone and
# raw libyajl (see Benchmarks/Callgrind/main.swift), each into .callgrind/NAME.MODE.out (for
# scripts/callgrind-phases.py); FLATLAND_UNTYPED=1 makes the ingest untyped.
# Builds FlatlandJSON, Flatland and FlatlandFixtures with -O -wmo (as a release build does) into
# .callgrind/ (git-ignored), then prints one line per dataset: name, bytes, instructions, per byte.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-../shared/data/json}"
OUT=.callgrind
MODULES="$OUT/modules"
rm -rf "$OUT"
mkdir -p "$MODULES"
read -r -a YAJL_CFLAGS <<<"$(pkg-config --cflags yajl 2>/dev/null)"
SWIFTC=(swiftc -O -parse-as-library -I Sources/CYAJL -I Sources/CFlatlandSIMD/include "${YAJL_CFLAGS[@]}")

clang -O2 -c -I Sources/CFlatlandSIMD/include Sources/CFlatlandSIMD/classify.c -o "$OUT/classify.o"
module() {
    local name="$1"
    # shellcheck disable=SC2046
    "${SWIFTC[@]}" -wmo -package-name flatland -module-name "$name" -I "$MODULES" \
        -emit-module -emit-module-path "$MODULES/$name.swiftmodule" -c -o "$OUT/$name.o" \
        $(find "Sources/$name" -name '*.swift' | sort)
}
module FlatlandJSON
module Flatland
module FlatlandFixtures
"${SWIFTC[@]}" -module-name CallgrindIngest -I "$MODULES" Benchmarks/Callgrind/main.swift \
    "$OUT/FlatlandJSON.o" "$OUT/Flatland.o" "$OUT/FlatlandFixtures.o" "$OUT/classify.o" -lyajl \
    -o "$OUT/callgrind-ingest"

for mode in ${FLATLAND_CALLGRIND_MODES:-ingest}; do
    export FLATLAND_CALLGRIND_MODE="$mode"
    for name in seed-1MB twitter.json github_events.json pull-page; do
        if ! "$OUT/callgrind-ingest" "$name" "$DATA" >/dev/null 2>&1; then
            echo "$name: not found in $DATA, skipped"
            continue
        fi
        bytes=$("$OUT/callgrind-ingest" "$name" "$DATA" | awk '{print $2}')
        valgrind --tool=callgrind --callgrind-out-file="$OUT/$name.$mode.out" \
            --toggle-collect='*callgrindMeasured*' "$OUT/callgrind-ingest" "$name" "$DATA" >/dev/null 2>&1
        ir=$(grep -E '^(summary|totals):' "$OUT/$name.$mode.out" | head -1 | awk '{print $2}')
        awk -v n="$name" -v m="$mode" -v b="$bytes" -v i="$ir" \
            'BEGIN { printf "%-20s %-7s bytes %9d  instructions %11d  per byte %.2f\n", n, m, b, i, i / b }'
    done
done
