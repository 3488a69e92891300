#!/usr/bin/env bash
# Builds the libFuzzer harnesses with AddressSanitizer and runs each of them.
#   scripts/fuzz.sh [SECONDS] [json|ingest|all]   (default 60 seconds each, all)
# json: the FlatlandJSON parser (Fuzz/FlatlandJSONFuzzer). ingest: the ingestor and the store
# (Fuzz/FlatlandIngestFuzzer). Build products, corpora and crash files go to .fuzz/ (git-ignored).
# Exits non-zero when a fuzzer finds a crash, a leak or a failed check.
set -uo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_RUN="${1:-60}"
WHICH="${2:-all}"
OUT=.fuzz
# The longest inputs libFuzzer makes (it starts short and grows them; the seeds below come near).
JSON_MAX_LEN=65536
INGEST_MAX_LEN=16384
MODULES="$OUT/modules"
mkdir -p "$OUT" "$MODULES"
# A trap's report comes from the fuzzer and the sanitizer; Swift's backtracer would read the
# sanitizer's shadow stack.
export SWIFT_BACKTRACE=enable=no
INCLUDES=(-I Sources/CYAJL -I Sources/CFlatlandSIMD/include)
read -r -a YAJL_CFLAGS <<<"$(pkg-config --cflags yajl 2>/dev/null)"
SWIFTC=(swiftc -sanitize=fuzzer,address -parse-as-library -O -g "${INCLUDES[@]}" "${YAJL_CFLAGS[@]}")

quiet() { grep -v 'Cannot export local symbol' || true; }

echo "== building"
# The SIMD block classifier is C: compiled on its own, with the same sanitizers.
clang -fsanitize=fuzzer-no-link,address -O2 -g -c -I Sources/CFlatlandSIMD/include \
    Sources/CFlatlandSIMD/classify.c -o "$OUT/classify.o" || { echo "build failed" >&2; exit 1; }
# The library modules, as SwiftPM would make them: FlatlandJSON, then Flatland on top of it.
module() {
    local name="$1"
    rm -f "$OUT/$name.o"
    # shellcheck disable=SC2046
    "${SWIFTC[@]}" -wmo -package-name flatland -module-name "$name" -I "$MODULES" \
        -emit-module -emit-module-path "$MODULES/$name.swiftmodule" -c -o "$OUT/$name.o" \
        $(find "Sources/$name" -name '*.swift' | sort) 2>&1 | quiet
    [ -f "$OUT/$name.o" ] || { echo "build of $name failed" >&2; exit 1; }
}
module FlatlandJSON
module Flatland
harness() {
    local name="$1"
    shift
    rm -f "$OUT/$name"
    "${SWIFTC[@]}" -module-name "${name}Main" -I "$MODULES" "Fuzz/$name/main.swift" Fuzz/Shared/*.swift \
        "$@" "$OUT/classify.o" -lyajl -o "$OUT/$name" 2>&1 | quiet
    [ -x "$OUT/$name" ] || { echo "build of $name failed" >&2; exit 1; }
}
harness FlatlandJSONFuzzer "$OUT/FlatlandJSON.o"
harness FlatlandIngestFuzzer "$OUT/FlatlandJSON.o" "$OUT/Flatland.o"

CORPUS="$OUT/corpus"
INGEST_CORPUS="$OUT/ingest-corpus"
mkdir -p "$CORPUS" "$INGEST_CORPUS" "$OUT/artifacts"

# Seeds: three header bytes (options, chunk seed, largest chunk), then a JSON text.
seed() {
    local name="$1" header="$2" body="$3"
    printf "$header%s" "$body" >"$CORPUS/seed-$name"
}
i=0
while IFS= read -r line; do
    for header in '\x00\x07\x03' '\x01\x2a\x01' '\x02\x11\x3f' '\x04\x05\x08' '\x0b\x63\x02' '\x03\x01\x00'; do
        i=$((i + 1))
        seed "$i" "$header" "$line"
    done
done <<'JSON'
{"id":"u-lQ7tSlU4A9OmDjIefiOEMG5Dsy02Yt3q","name":"Ada","age":36,"tags":["a","b"],"ok":true,"x":null}
[1,-0,0.5,1e400,1e-400,-9223372036854775808,18446744073709551615,9007199254740993,1.0,1E+2,0.1]
{"offset":12,"count":2,"total":47,"data":[{"uuid":"u-1"},{"uuid":"u-2","friends":["u-3"]}]}
"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00 é ☃ 😀"
[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
{"a":{"b":{"c":{"d":[{"e":[]}]}}},"a":2}
[1,2,3 4]
{"a":1 "b":2}
{"a" "b"}
[1,]
{"a":1,}
[01]
["\ud800"]
["\udc00\ud800"]
[1] x
/* c */ [1, // d
2]
{"a":1}
{"b":2}
[tru
[NaN, Infinity, 'x']
{"users":{"offset":0,"count":2,"data":[{"uuid":"u-6BXcQMLIoKQZRFDasYgy2CintHW0XGwh","firstname":"Zoë","lastname":"García","email":"zoë.6140@example.com","age":32,"score":582.44,"created":"2021-03-27T12:09:46.626Z","avatar":"https:\/\/img.example.com\/a.png","bio":"日本語のテキスト \"quoted\" \u00e9\ud83d\ude00","devices":[{"uuid":"d-lYaQqF2XZhCrFGP7eHUe0Fe3yTeHg9Mm","name":"Zoë's iPad Air","tags":[1,2,3,-4.5e-7,true,false,null]}],"friends":[{"uuid":"u-kglDkl0voisKeZC16A5hOxjNlN4JTtka","firstname":"Hedy"}]}]}}
JSON

# JSON tokens help libFuzzer reach the grammar quickly.
cat >"$OUT/json.dict" <<'DICT'
"{"
"}"
"["
"]"
","
":"
"\""
"true"
"false"
"null"
"-0"
"1e400"
"0.1"
"\\u"
"\\ud83d\\ude00"
"\\ud800"
"\\udc00"
"\\n"
"/*"
"*/"
"//"
"\xc3\xa9"
"\xe2\x98\x83"
"\xf0\x9f\x98\x80"
"\xed\xa0\x80"
"\x0c"
"\x0b"
"uuid"
"serial"
"kind"
"Thing"
"friends"
DICT

# Generated seeds: invalid UTF-8, nesting past the default depth, long strings and numbers.
printf '\x00\x01\x05["\xc0\xaf","\xe0\x80\xaf","\xed\xa0\x80","\xf4\x90\x80\x80","\x80","\xe2\x82"]' >"$CORPUS/seed-utf8"
printf '\x04\x02\x07["\xc0\xaf","\xe0\x80\xaf","\xed\xa0\x80","\xf4\x90\x80\x80","\x80","\xe2\x82"]' >"$CORPUS/seed-utf8-lenient"
printf '\x00\x03\x3f%s' "$(printf '[%.0s' $(seq 600))" >"$CORPUS/seed-deep"
printf '\x08\x03\x02%s' "$(printf '{"a":[%.0s' $(seq 9))1$(printf ']}%.0s' $(seq 9))" >"$CORPUS/seed-deep-small-limit"
printf '\x00\x09\x05["%s"]' "$(printf 'x\\u00e9%.0s' $(seq 200))" >"$CORPUS/seed-long-string"
printf '\x08\x09\x05[%s]' "$(printf '7%.0s' $(seq 40))" >"$CORPUS/seed-long-number"
# Long strings and many keys, near the longest input (JSON_MAX_LEN): a string that spans
# thousands of chunks is held until it ends (once quadratic in libyajl), and objects with
# thousands of members go through the key index. Plain text, escapes and UTF-8, keys and values.
repeat() { head -c "$2" /dev/zero | tr '\0' "$1"; }
members() { seq 0 $(($1 - 1)) | sed "s/.*/\"$2&\":&/" | paste -sd, -; }
printf '\x00\x07\x3f["%s"]' "$(repeat x 60000)" >"$CORPUS/seed-longer-string"
printf '\x00\x01\x00["%s"]' "$(repeat y 30000)" >"$CORPUS/seed-longer-string-small-chunks"
printf '\x04\x2a\x10{"%s":"%s\\u00e9\xc3\xa9\\ud83d\\ude00%s"}' "$(repeat k 20000)" "$(repeat v 20000)" \
    "$(repeat w 20000)" >"$CORPUS/seed-long-key-and-string"
printf '\x01\x11\x3f{%s}' "$(members 4000 k)" >"$CORPUS/seed-many-keys"
printf '\x00\x05\x08{%s,%s}' "$(members 2000 d)" "$(members 2000 d)" >"$CORPUS/seed-many-duplicate-keys"

# Ingest seeds: the same header (its first byte selects the ingest options: unknown prefixes,
# bad entities, a version key, a small pending budget, UTF-8 repair, a small depth limit), then a
# response: entities nested, repeated, versioned, partial, badly typed, in slices and containers.
i=0
while IFS= read -r line; do
    for header in '\x00\x07\x03' '\x04\x2a\x01' '\x09\x11\x3f' '\x12\x05\x08' '\x1a\x63\x02' '\x61\x01\x00' '\x26\x09\x05'; do
        i=$((i + 1))
        printf "$header%s" "$line" >"$INGEST_CORPUS/seed-$i"
    done
done <<'JSON'
{"uuid":"u-1","name":"Ada","age":36,"small":7,"score":1.5,"ok":true,"created":"2024-12-10T11:02:20.942Z","avatar":"https://e.com/a.png","friends":["u-2",{"uuid":"u-3","name":"C"}],"device":{"uuid":"d-1","rev":4,"name":"p"},"tags":["a","b"],"extra":{"k":[1,null]}}
[{"uuid":"u-1","name":"a"},{"uuid":"u-1","age":2},{"uuid":"u-2","friends":["u-1"]},{"uuid":"zz-9","q":1}]
{"offset":0,"count":2,"total":5,"data":[{"uuid":"u-5","name":"x"},{"uuid":"d-2","rev":1,"owner":"u-5"},7,null]}
{"users":{"offset":2,"data":[{"name":"late id","uuid":"u-9"},{"uuid":"u-10","small":300}]},"session":{"uuid":"s-1","user":{"uuid":"u-1"}}}
[{"uuid":"d-1","rev":2,"name":"old"},{"uuid":"d-1","rev":5,"name":"new"},{"uuid":"d-1","rev":5,"name":"same"}]
[{"uuid":"u-1","age":"not a number"},{"uuid":"u-2","created":"yesterday"},{"uuid":"u-3","avatar":12}]
{"a":{"b":{"c":{"uuid":"u-7","friends":[{"uuid":"u-8","device":{"uuid":"d-8"}}]}}}}
[{"uuid":"u-1","version":3,"name":"v3"},{"uuid":"u-1","version":2,"name":"v2"}]
{"uuid":"x-1","any":[1,{"k":null}],"nested":{"uuid":"u-1","name":"in untyped"}}
{"offset":86666666666,"total":5,"data":[{"uuid":"u-1"},7]}
{"page":{"offset":9223372036854775807,"count":2,"data":[{"uuid":"u-1"},{"uuid":"u-2"}]}}
JSON
# Ingest seeds with long strings and many keys, near INGEST_MAX_LEN: an untyped entity with
# thousands of members, a typed one with a long string, and members repeated.
i=$((i + 1))
printf '\x00\x07\x3f{"uuid":"x-1",%s}' "$(members 1200 k)" >"$INGEST_CORPUS/seed-$i"
i=$((i + 1))
printf '\x04\x01\x00[{"uuid":"x-2",%s},{"uuid":"x-2",%s}]' "$(members 500 a)" "$(members 500 b)" \
    >"$INGEST_CORPUS/seed-$i"
i=$((i + 1))
printf '\x00\x2a\x3f[{"uuid":"u-1","name":"%s"},{"uuid":"x-3","text":"%s"}]' "$(repeat n 8000)" \
    "$(repeat t 8000)" >"$INGEST_CORPUS/seed-$i"
# A bracket past a small depth limit that is also out of place (found by this fuzzer: in small
# chunks it was the depth error, whole, through the fast path (128 bytes or more), the syntax
# error).
i=$((i + 1))
printf '\x61\x01\x00%s' \
    '{"a":{"b":{"c":{"uuid":"u-7","friends":[{"uuid":"u-8"{"uuid":"u-7","friends":[{"uuid":"u-8","device":{","device":{"ruid":"d-8"}}]}}}}' \
    >"$INGEST_CORPUS/seed-$i"
# Ingest seeds for the rule resolver (option bit 7): ids by position, nesting and type.
for header in '\x80\x07\x03' '\x84\x2a\x01' '\x89\x11\x3f' '\x82\x05\x08' '\xa0\x63\x02'; do
    i=$((i + 1))
    printf "$header%s" '[{"uuid":"u-1","name":"a","user":{"id":"7","name":"b"},"device":{"serial":5,"name":"p","owner":{"name":"c","id":"7"}}},{"id":1,"kind":"BigThing","friends":[{"id":"8"},{"id":"7","age":3}],"other":{"id":2}},{"name":"late","uuid":"u-1","device":{"name":"q","serial":"5"}}]' >"$INGEST_CORPUS/seed-$i"
    # An identity key given twice (found by this fuzzer: the two ways once took different values).
    i=$((i + 1))
    printf "$header%s" '[{"uuid":"u-1","name":"a","user":{"id":2},"x":"late","uuid":"u-0","device":{"name":"q","serial":"5","serial":"6"}}]' >"$INGEST_CORPUS/seed-$i"
done

# run NAME CORPUS MAX_LEN: one harness for SECONDS_TO_RUN, inputs up to MAX_LEN bytes; returns
# its status.
run() {
    local name="$1" corpus="$2" max_len="$3" log="$OUT/$1.log"
    echo "== fuzzing $name for $SECONDS_TO_RUN s, inputs up to $max_len bytes (log: $log)"
    "$OUT/$name" "$corpus" -dict="$OUT/json.dict" -max_total_time="$SECONDS_TO_RUN" -max_len="$max_len" -timeout=10 \
        -artifact_prefix="$OUT/artifacts/$name-" -print_final_stats=1 >"$log" 2>&1
    local status=$?
    # A trap's message follows its file and line (`main.swift:12: Fatal error: ...`).
    grep -E '(^==[0-9]+==ERROR|^SUMMARY|[Ff]atal error|^artifact_prefix|^Test unit written)' "$log" || true
    grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$log" | sort -u || true
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [ "$status" -ne 0 ]; then
        echo "summary: $name: ${runs:-?} executions, crash found (status $status); artifacts in $OUT/artifacts" >&2
        # CI keeps only this output: the crashing input, in base64, to replay it with
        # `base64 -d >crash && $OUT/$name crash`.
        local unit
        unit=$(sed -n 's/.*Test unit written to \([^ ]*\).*/\1/p' "$log" | tail -1)
        if [ -n "$unit" ] && [ -f "$unit" ] && [ "$(wc -c <"$unit")" -le 20000 ]; then
            echo "crashing input (base64):" >&2
            base64 -w 100 "$unit" >&2
        fi
    else
        echo "summary: $name: ${runs:-?} executions in $SECONDS_TO_RUN s, 0 crashes"
    fi
    return "$status"
}

status=0
case "$WHICH" in
json) run FlatlandJSONFuzzer "$CORPUS" "$JSON_MAX_LEN" || status=$? ;;
ingest) run FlatlandIngestFuzzer "$INGEST_CORPUS" "$INGEST_MAX_LEN" || status=$? ;;
all)
    run FlatlandJSONFuzzer "$CORPUS" "$JSON_MAX_LEN" || status=$?
    run FlatlandIngestFuzzer "$INGEST_CORPUS" "$INGEST_MAX_LEN" || status=$?
    ;;
*)
    echo "unknown harness $WHICH (json, ingest or all)" >&2
    exit 2
    ;;
esac
exit "$status"
