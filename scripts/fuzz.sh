#!/usr/bin/env bash
# Builds the FlatlandJSON libFuzzer harness with AddressSanitizer and runs it.
#   scripts/fuzz.sh [SECONDS]   (default 60)
# Build products, corpus and crash files go to .fuzz/ (git-ignored). Exits non-zero when the
# fuzzer finds a crash, a leak or a failed check.
set -uo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_RUN="${1:-60}"
OUT=.fuzz
BIN="$OUT/FlatlandJSONFuzzer"
CORPUS="$OUT/corpus"
ARTIFACTS="$OUT/artifacts"
mkdir -p "$OUT" "$CORPUS" "$ARTIFACTS"

echo "== building $BIN"
rm -f "$BIN"
# The SIMD block classifier is C: compiled on its own, with the same sanitizers.
clang -fsanitize=fuzzer-no-link,address -O2 -g -c -I Sources/CFlatlandSIMD/include \
    Sources/CFlatlandSIMD/classify.c -o "$OUT/classify.o" || { echo "build failed" >&2; exit 1; }
# shellcheck disable=SC2046
swiftc -sanitize=fuzzer,address -parse-as-library -O -g \
    -module-name FlatlandJSONFuzz \
    -I Sources/CYAJL -I Sources/CFlatlandSIMD/include $(pkg-config --cflags yajl 2>/dev/null) \
    $(find Sources/FlatlandJSON -name '*.swift' | sort) Fuzz/FlatlandJSONFuzzer/main.swift \
    "$OUT/classify.o" -lyajl -o "$BIN" 2>&1 | { grep -v 'Cannot export local symbol' || true; }
[ -x "$BIN" ] || { echo "build failed" >&2; exit 1; }

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
DICT

# Generated seeds: invalid UTF-8, nesting past the default depth, long strings and numbers.
printf '\x00\x01\x05["\xc0\xaf","\xe0\x80\xaf","\xed\xa0\x80","\xf4\x90\x80\x80","\x80","\xe2\x82"]' >"$CORPUS/seed-utf8"
printf '\x04\x02\x07["\xc0\xaf","\xe0\x80\xaf","\xed\xa0\x80","\xf4\x90\x80\x80","\x80","\xe2\x82"]' >"$CORPUS/seed-utf8-lenient"
printf '\x00\x03\x3f%s' "$(printf '[%.0s' $(seq 600))" >"$CORPUS/seed-deep"
printf '\x08\x03\x02%s' "$(printf '{"a":[%.0s' $(seq 9))1$(printf ']}%.0s' $(seq 9))" >"$CORPUS/seed-deep-small-limit"
printf '\x00\x09\x05["%s"]' "$(printf 'x\\u00e9%.0s' $(seq 200))" >"$CORPUS/seed-long-string"
printf '\x08\x09\x05[%s]' "$(printf '7%.0s' $(seq 40))" >"$CORPUS/seed-long-number"

echo "== fuzzing for $SECONDS_TO_RUN s (log: $OUT/last-run.log)"
set +e
"$BIN" "$CORPUS" -dict="$OUT/json.dict" -max_total_time="$SECONDS_TO_RUN" -max_len=2048 -timeout=10 \
    -artifact_prefix="$ARTIFACTS/" -print_final_stats=1 >"$OUT/last-run.log" 2>&1
status=$?
set -e
grep -E '^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*fatal error|artifact_prefix|Test unit written)' "$OUT/last-run.log" || true
grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$OUT/last-run.log" | sort -u || true
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/last-run.log" | tail -1)
if [ "$status" -ne 0 ]; then
    echo "summary: ${runs:-?} executions, crash found (status $status); artifacts in $ARTIFACTS" >&2
    exit "$status"
fi
echo "summary: ${runs:-?} executions in $SECONDS_TO_RUN s, 0 crashes"
