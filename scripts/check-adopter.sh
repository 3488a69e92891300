#!/usr/bin/env bash
# What an adopter pays: makes a throwaway package that depends on the four library products
# (Flatland, FlatlandSQLite, FlatlandHTTP, FlatlandSync) by path, resolves it, and counts the
# packages it resolved besides Flatland itself. Exits 1 when there are more than MAX (default 4).
#   scripts/check-adopter.sh [MAX] [--build]     (--build also builds the adopter)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
max="${1:-4}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/Sources/Adopter"
cat >"$dir/Package.swift" <<SWIFT
// swift-tools-version: 6.1
import PackageDescription
let package = Package(
    name: "Adopter",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Flatland", path: "$root")],
    targets: [
        .target(name: "Adopter", dependencies: [
            .product(name: "Flatland", package: "Flatland"),
            .product(name: "FlatlandSQLite", package: "Flatland"),
            .product(name: "FlatlandHTTP", package: "Flatland"),
            .product(name: "FlatlandSync", package: "Flatland"),
        ])
    ]
)
SWIFT
cat >"$dir/Sources/Adopter/Adopter.swift" <<'SWIFT'
import Flatland
import FlatlandHTTP
import FlatlandSQLite
import FlatlandSync

public func adopterStore() -> Store { Store() }
SWIFT
swift package --package-path "$dir" resolve >/dev/null
count=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["pins"]))' "$dir/Package.resolved")
echo "an adopter of the four library products resolves $count package(s):" \
    "$(python3 -c 'import json,sys; print(", ".join(p["identity"] for p in json.load(open(sys.argv[1]))["pins"]))' "$dir/Package.resolved")"
if [ "${2:-}" = "--build" ]; then swift build --package-path "$dir" >/dev/null && echo "and builds"; fi
[ "$count" -le "$max" ] || { echo "more than $max packages" >&2; exit 1; }
