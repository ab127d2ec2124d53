#!/bin/sh
# validate_junit.sh -- `mbsim validate --junit FILE --max-error PCT` (issue 36, part 6; docs/ci.md).
#
# The XML parses (xmllint when installed, else a tag-balance check in awk) and its counts are
# those the same validation's --json gives, counted here from the JSON rows: tests = rows,
# skipped + errors = the skipped rows (errors: those whose reason starts "simulation"),
# failures = the predicted rows whose |err_pct| is past the threshold, at three thresholds
# (0: every predicted row with a non-zero error; 1e6: none; between the smallest and largest
# |error|: the rows above it). An id with XML markup characters is escaped. A path that cannot
# be written, or that is the CSV read, is an error that leaves no file and the CSV intact.
#
#   validate_junit.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
csv=$tmp/runs.csv
cp tests/data/validate/small.csv "$csv"
# one more predicted row whose id holds the five XML markup characters
printf '%s\n' "\"markup\",\"a&b<c>'d\"\"\",llama3_8b,DGX-H100,8,BF16,128,1,8192,1,1,1,,,,0,none,9000,," >> "$csv"
"$bin" validate "$csv" --json -j 1 --progress 0 > "$tmp/v.json" 2> "$tmp/err" || fail "validate --json: $(cat "$tmp/err")"

# |err_pct| of every predicted row, one per line, and the counts of the JSON
awk -F': ' '/"err_pct"/ { v = $2; sub(/,$/, "", v); if (v < 0) v = -v; print v }' "$tmp/v.json" > "$tmp/errs"
n_rows=$(sed -n 's/^  "n_rows": \([0-9]*\),*$/\1/p' "$tmp/v.json")
n_pred=$(sed -n 's/^  "n_predicted": \([0-9]*\),*$/\1/p' "$tmp/v.json")
n_skip=$(sed -n 's/^  "n_skipped": \([0-9]*\),*$/\1/p' "$tmp/v.json")
n_simerr=$(grep -c '"reason": "simulation' "$tmp/v.json")
[ -n "$n_rows" ] && [ -n "$n_pred" ] && [ -n "$n_skip" ] || fail "counts not found in the JSON"
[ "$(wc -l < "$tmp/errs")" = "$n_pred" ] || fail "$(wc -l < "$tmp/errs") err_pct values for $n_pred predicted rows"
[ "$n_pred" -ge 3 ] || fail "the fixture should predict at least 3 rows, got $n_pred"

xml_ok() { # FILE: well-formed XML
    if command -v xmllint > /dev/null 2>&1; then
        xmllint --noout "$1" 2> "$tmp/xmlerr" || fail "$1 is not well-formed XML: $(cat "$tmp/xmlerr")"
    else # each start tag closed, in order (the report has no comments, CDATA or '>' inside attributes)
        tr '\n' ' ' < "$1" | sed 's/<?xml[^>]*?>//' | tr '<' '\n' | awk '
            /^\// { t = $1; sub(/^\//, "", t); sub(/>.*/, "", t); if (d == 0 || st[d] != t) { bad = 1 } d--; next }
            /^[a-z]/ { t = $1; sub(/>.*/, "", t); if ($0 !~ /\/>/) st[++d] = t }
            END { exit bad || d != 0 }' || fail "$1: start and end tags do not match"
    fi
}
attr() { # FILE ATTRIBUTE: its value on the <testsuite> element
    sed -n "s/.*<testsuite name=\"mbsim validate\".* $2=\"\([0-9]*\)\".*/\1/p" "$1"
}
check() { # THRESHOLD EXPECTED_FAILURES
    out=$tmp/j_$1.xml
    "$bin" validate "$csv" -j 1 --progress 0 --junit "$out" --max-error "$1" > /dev/null 2> "$tmp/err" ||
        fail "--max-error $1: exit $?: $(cat "$tmp/err")"
    xml_ok "$out"
    [ "$(attr "$out" tests)" = "$n_rows" ] || fail "--max-error $1: tests=$(attr "$out" tests), expected $n_rows"
    [ "$(attr "$out" failures)" = "$2" ] || fail "--max-error $1: failures=$(attr "$out" failures), expected $2"
    [ "$(attr "$out" errors)" = "$n_simerr" ] || fail "--max-error $1: errors=$(attr "$out" errors), expected $n_simerr"
    [ "$(attr "$out" skipped)" = "$((n_skip - n_simerr))" ] || fail "--max-error $1: skipped=$(attr "$out" skipped)"
    [ "$(grep -c '<testcase ' "$out")" = "$n_rows" ] || fail "--max-error $1: $(grep -c '<testcase ' "$out") testcases"
    [ "$(grep -c '<failure ' "$out")" = "$2" ] || fail "--max-error $1: $(grep -c '<failure ' "$out") <failure> elements"
    [ "$(grep -c '<skipped ' "$out")" = "$((n_skip - n_simerr))" ] || fail "--max-error $1: <skipped> elements"
}
nonzero=$(awk '$1 > 0' "$tmp/errs" | wc -l)
check 0 "$nonzero"
check 1000000 0
# a threshold between the smallest and the largest |error|: the rows strictly above it fail
mid=$(sort -g "$tmp/errs" | awk '{ v[NR] = $1 } END { print (v[1] + v[NR]) / 2 }')
above=$(awk -v m="$mid" '$1 > m' "$tmp/errs" | wc -l)
[ "$above" -ge 1 ] && [ "$above" -lt "$n_pred" ] || fail "threshold $mid splits nothing ($above of $n_pred)"
check "$mid" "$above"
grep -q "name=\"a&amp;b&lt;c&gt;&apos;d&quot;\"" "$tmp/j_0.xml" || fail "the id with markup is not escaped: $(grep markup "$tmp/j_0.xml")"

# usage and output errors
"$bin" validate "$csv" --junit "$tmp/x.xml" > /dev/null 2>&1
[ $? = 2 ] || fail "--junit without --max-error: not exit 2"
"$bin" validate "$csv" --max-error 5 > /dev/null 2>&1
[ $? = 2 ] || fail "--max-error without --junit: not exit 2"
"$bin" validate "$csv" --junit "$tmp/x.xml" --max-error -1 > /dev/null 2>&1
[ $? = 2 ] || fail "--max-error -1: not exit 2"
"$bin" validate "$csv" --progress 0 --junit "$tmp/no/such/dir/x.xml" --max-error 5 > "$tmp/out" 2> "$tmp/err"
[ $? = 1 ] || fail "--junit into a missing folder: not exit 1"
[ -s "$tmp/out" ] && fail "--junit into a missing folder: refused only after validating (a report was printed)"
grep -q "no/such/dir/x.xml" "$tmp/err" || fail "--junit into a missing folder: path not named: $(cat "$tmp/err")"
cp "$csv" "$tmp/keep.csv"
"$bin" validate "$csv" --progress 0 --junit "$csv" --max-error 5 > /dev/null 2> "$tmp/err"
[ $? = 1 ] || fail "--junit naming the CSV: not exit 1"
cmp -s "$csv" "$tmp/keep.csv" || fail "--junit naming the CSV changed it"
[ -z "$(ls -A "$tmp" | grep '\.tmp$')" ] || fail "temporary files left: $(ls -A "$tmp")"
echo "validate_junit: $n_rows testcases, failures at 0 / $mid / 1e6 %: $nonzero / $above / 0, errors $n_simerr, skipped $((n_skip - n_simerr))"
