#!/usr/bin/env python3
"""Instructions per byte by phase, from a callgrind output file.

    scripts/callgrind-phases.py FILE.out BYTES

Every function's own instructions (callgrind_annotate --inclusive=no, all functions) are put in
one phase by its object file and its mangled Swift module, then divided by BYTES: what the parser
library, the strict parse layer, the ingest walk, the store, the typed values, the Swift runtime
and the allocator each cost per byte of input. Used by the notes on the bars of `flatland bench`.
"""
import re
import subprocess
import sys

PHASES = [
    ("libyajl (the parser library)", lambda sym, obj: "libyajl" in obj),
    ("sqlite3 (the database library)", lambda sym, obj: "libsqlite3" in obj),
    ("strict parse layer (FlatlandJSON, SIMD summary)", lambda sym, obj: "12FlatlandJSON" in sym
        or "flatland_classify" in sym or "classify" in sym and "flatland" in obj),
    ("persistence (FlatlandSQLite, GRDB)", lambda sym, obj: "14FlatlandSQLite" in sym or "4GRDB" in sym),
    ("store (records, collections, commit)", lambda sym, obj: "8Flatland" in sym and re.search(
        r"Store|Record|IndexTable|Collection|ChangeSet|Contents|Staged|Positions", sym) is not None),
    ("ingest walk (frames, fields, identities, boxes)", lambda sym, obj: "8Flatland" in sym),
    ("typed values (entity types, Foundation: dates, URLs)", lambda sym, obj: "16FlatlandFixtures" in sym
        or "Foundation" in obj or "Foundation" in sym),
    ("allocator (malloc, free)", lambda sym, obj: "libc.so" in obj and re.search(
        r"malloc|free|_int_|cfree|realloc|calloc|tcache|unlink_chunk|consolidate", sym) is not None),
    ("Swift runtime and standard library", lambda sym, obj: "libswift" in obj or sym.startswith("swift_")
        or sym.startswith("$s")),
    ("other (libc, kernel entry, loader)", lambda sym, obj: True),
]


def main() -> None:
    path, size = sys.argv[1], int(sys.argv[2])
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
        check=True, capture_output=True, text=True).stdout
    totals = {name: 0 for name, _ in PHASES}
    program = 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        rest = m.group(2)
        if rest.startswith("PROGRAM TOTALS"):
            program = count
            continue
        obj = rest[rest.rfind("[") + 1:-1] if rest.endswith("]") else ""
        sym = rest.split(":", 1)[1] if ":" in rest else rest
        sym = sym[: sym.rfind(" [")] if " [" in sym else sym
        for name, test in PHASES:
            if test(sym, obj):
                totals[name] += count
                break
    print(f"{'phase':<55} {'instructions':>14} {'per byte':>9}")
    for name, _ in PHASES:
        if totals[name]:
            print(f"{name:<55} {totals[name]:>14,} {totals[name] / size:>9.2f}")
    print(f"{'all':<55} {program:>14,} {program / size:>9.2f}")


if __name__ == "__main__":
    main()
