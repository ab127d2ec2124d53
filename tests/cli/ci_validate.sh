#!/bin/sh
# The CI recipe of docs/ci.md: scripts/ci_validate.sh on a small CSV passes
# against a generous MAPE threshold, fails (1) against a tight one, passes
# against its own JSON as the baseline, and fails (3) against a baseline whose
# one row predicted 1 token/s. Artifacts: validate.txt, validate.json (and
# validate.png with gnuplot). -r passes recipe files on (--recipes).
#   sh tests/cli/ci_validate.sh MBSIM_BINARY
set -u
MBSIM=$1
export MBSIM
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
csv=tests/data/validate/small.csv
fail() { echo "FAIL: $*"; exit 1; }

sh scripts/ci_validate.sh $csv 1000 -o "$tmp/a" > "$tmp/a.log" 2>&1 || fail "MAPE <= 1000 % should pass: $(cat "$tmp/a.log")"
grep -q "^PASS: MAPE" "$tmp/a.log" || fail "no PASS line"
[ -s "$tmp/a/validate.txt" ] && [ -s "$tmp/a/validate.json" ] || fail "artifacts missing"

sh scripts/ci_validate.sh $csv 0.001 -o "$tmp/b" > "$tmp/b.log" 2>&1
[ $? -eq 1 ] || fail "MAPE above 0.001 % should exit 1"

sh scripts/ci_validate.sh $csv 1000 -o "$tmp/c" -b "$tmp/a/validate.json" > "$tmp/c.log" 2>&1 ||
    fail "its own baseline should pass: $(cat "$tmp/c.log")"
grep -q "drift: none past 5.00 %" "$tmp/c.log" || fail "no drift line"

sh scripts/ci_validate.sh $csv 1000 -o "$tmp/d" -b tests/data/validate/baseline_small_off.json -d 2 > "$tmp/d.log" 2>&1
[ $? -eq 3 ] || fail "a drifted baseline should exit 3: $(cat "$tmp/d.log")"
grep -q "PAST THRESHOLD" "$tmp/d.log" || fail "no PAST THRESHOLD row"
grep -q "^FAIL: .*drifted past 2%" "$tmp/d.log" || fail "no drift FAIL line"

# -r: a row simulated from its recipe file (tests/data/validate/recipes/rec_row.yaml), in both artifacts
sh scripts/ci_validate.sh tests/data/validate/recipes.csv 1000 -o "$tmp/e" -r tests/data/validate/recipes > "$tmp/e.log" 2>&1 ||
    fail "-r should pass: $(cat "$tmp/e.log")"
grep -q "rows simulated from a recipe file (--recipes; named in the note): 1" "$tmp/e/validate.txt" || fail "-r not in the report"
grep -q '"n_recipe_files": 1' "$tmp/e/validate.json" || fail "-r not in the JSON"

# -j: the JUnit report beside the other artifacts; at 0 % every predicted row with an error fails
sh scripts/ci_validate.sh $csv 1000 -o "$tmp/f" -j 0 > "$tmp/f.log" 2>&1 || fail "-j 0 should pass the MAPE gate: $(cat "$tmp/f.log")"
npred=$(sed -n 's/^  "n_predicted": \([0-9]*\),*$/\1/p' "$tmp/f/validate.json")
grep -q "<testsuite name=\"mbsim validate\" tests=\"[0-9]*\" failures=\"$npred\"" "$tmp/f/junit.xml" ||
    fail "-j 0: junit.xml does not fail the $npred predicted rows: $(head -3 "$tmp/f/junit.xml")"
sh scripts/ci_validate.sh $csv 1000 -j x > /dev/null 2>&1
[ $? -eq 2 ] || fail "-j x should exit 2"

sh scripts/ci_validate.sh $csv 1000 -r -o > /dev/null 2>&1
[ $? -eq 2 ] || fail "-r followed by an option should exit 2"

sh scripts/ci_validate.sh $csv 1000 -d x > /dev/null 2>&1
[ $? -eq 2 ] || fail "a bad -d should exit 2"
echo "ci_validate: ok"
