#!/bin/sh
# validate_pairs.sh -- `mbsim validate CSV --pairs [FILE]` from the command line (issue 34): the
# operand forms, the JSON object and the usage errors. The counts come from the fixture itself
# (tests/data/validate/pairs.csv, worked out in tests/unit/test_validate_pairs.c: 9 named pairs,
# 1 other_recipe-only pair; pairs_ok.txt names 2 pairs that are predicted and 1 that is not).
#   - a bare --pairs finds the pairs; --pairs FILE and --pairs=FILE read them;
#   - --json prints one object whose n_pairs is the text report's count;
#   - --pairs twice is a usage error (exit 2); an empty pairs file or one that does not exist fails
#     (exit 1) before any row is simulated (no row report on stdout).
#
#   validate_pairs.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
V=tests/data/validate

"$bin" validate $V/pairs.csv --pairs > "$tmp/found.txt" 2>/dev/null || fail "--pairs: exit $?"
grep -q "^A/B pairs: 9 compared" "$tmp/found.txt" || fail "--pairs: $(grep 'A/B' "$tmp/found.txt")"
"$bin" validate $V/pairs.csv --pairs $V/pairs_ok.txt > "$tmp/file.txt" 2>/dev/null || fail "--pairs FILE: exit $?"
grep -q "^A/B pairs: 2 compared (1 more left out" "$tmp/file.txt" || fail "--pairs FILE: $(grep 'A/B' "$tmp/file.txt")"
"$bin" validate --pairs=$V/pairs_ok.txt $V/pairs.csv > "$tmp/eq.txt" 2>/dev/null || fail "--pairs=FILE: exit $?"
cmp -s "$tmp/file.txt" "$tmp/eq.txt" || fail "--pairs=FILE and --pairs FILE differ"
"$bin" validate $V/pairs.csv --pairs --json > "$tmp/p.json" 2>/dev/null || fail "--pairs --json: exit $?"
grep -q '"n_pairs": 9,' "$tmp/p.json" || fail "--pairs --json: n_pairs is not 9: $(head -c 300 "$tmp/p.json")"

expect() { # CODE PATTERN ARGS...
    code=$1 pat=$2
    shift 2
    "$bin" validate "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ $rc -eq "$code" ] || fail "validate $*: exit $rc, expected $code: $(cat "$tmp/err")"
    grep -q -- "$pat" "$tmp/err" || fail "validate $*: stderr lacks '$pat': $(cat "$tmp/err")"
    [ ! -s "$tmp/out" ] || fail "validate $*: printed rows before failing: $(head -3 "$tmp/out")"
}
expect 2 "given twice" $V/pairs.csv --pairs --pairs
expect 1 "pairs_empty.txt:3:1: no pairs" $V/pairs.csv --pairs $V/pairs_empty.txt
expect 1 "no_such_pairs.txt" $V/pairs.csv --pairs=$V/no_such_pairs.txt
echo "validate_pairs: ok"
