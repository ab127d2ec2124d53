#!/bin/sh
# install.sh -- mbsim as an installed tool: `cmake --install` of the current
# build tree into a temporary prefix, then the installed binary run from an
# unrelated directory with the source tree out of reach. Expectations:
#   - the install lays out P/bin/mbsim, P/share/mbsim/{topology/systems,
#     workloads/models,calibration/tables,plots,scenarios}, the man page and
#     the bash completion;
#   - with $MBSIM_DATA_DIR unset and MBSIM_NO_SOURCE_TREE=1 (the lookup's test
#     hook: "the source tree is gone") the binary finds P/share/mbsim on its
#     own: `mbsim systems` lists the presets and `mbsim run` of the installed
#     headline scenario succeeds;
#   - the installed bash completion completes a subcommand;
#   - an install whose data was removed fails with a message that names the
#     directory it looked in and MBSIM_DATA_DIR.
#
#   install.sh CMAKE BUILD_DIR      (CTest passes both)
set -u
cmake=$1
build=$2
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$tmp/prefix

"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1 || fail "cmake --install: $(cat "$tmp/install.log")"
for f in bin/mbsim share/mbsim/topology/systems/gb200_nvl72.yaml share/mbsim/topology/systems/gb200_nvl72.xml \
         share/mbsim/workloads/models/qwen3_vl_30b_a3b.yaml share/mbsim/calibration/tables/GB200.yaml \
         share/mbsim/plots/sweep.gp share/mbsim/scenarios/gb200_ep32.yaml share/man/man1/mbsim.1 \
         share/bash-completion/completions/mbsim; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
done

# the source tree is gone: no $MBSIM_DATA_DIR, no build-tree lookup, another cwd
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" || fail "cd"
gone() { env -u MBSIM_DATA_DIR MBSIM_NO_SOURCE_TREE=1 "$prefix/bin/mbsim" "$@"; }

gone systems > "$tmp/systems.out" 2> "$tmp/systems.err" || fail "mbsim systems: $(cat "$tmp/systems.err")"
grep -q gb200_nvl72 "$tmp/systems.out" || fail "mbsim systems does not list gb200_nvl72: $(cat "$tmp/systems.out")"
gone models > "$tmp/models.out" 2> "$tmp/models.err" || fail "mbsim models: $(cat "$tmp/models.err")"
grep -q qwen3_vl_30b_a3b "$tmp/models.out" || fail "mbsim models does not list qwen3_vl_30b_a3b"

gone run "$prefix/share/mbsim/scenarios/gb200_ep32.yaml" --json > "$tmp/run.json" 2> "$tmp/run.err" ||
    fail "mbsim run of the installed scenario: $(cat "$tmp/run.err")"
grep -q '"scenario": "gb200_ep32"' "$tmp/run.json" && grep -q '"step_time_s"' "$tmp/run.json" ||
    fail "mbsim run printed no report of gb200_ep32 with a step time"

# an explicit $MBSIM_DATA_DIR still wins
env MBSIM_DATA_DIR="$prefix/share/mbsim" MBSIM_NO_SOURCE_TREE=1 "$prefix/bin/mbsim" systems > /dev/null 2>&1 ||
    fail "MBSIM_DATA_DIR=<prefix>/share/mbsim"

# data removed: a clear message, exit 1
rm -rf "$prefix/share/mbsim/workloads"
gone systems > /dev/null 2> "$tmp/missing.err"
rc=$?
[ $rc -eq 1 ] || fail "missing data: exit $rc, want 1"
grep -q "MBSIM_DATA_DIR" "$tmp/missing.err" || fail "missing data: message does not name MBSIM_DATA_DIR: $(cat "$tmp/missing.err")"
grep -q "no workloads/models" "$tmp/missing.err" || fail "missing data: message does not say what is missing"
# the installed bash completion completes subcommands
if command -v bash > /dev/null 2>&1; then
    got=$(bash -c '. "$1"; COMP_WORDS=(mbsim sw); COMP_CWORD=1; _mbsim; echo "${COMPREPLY[*]}"' sh \
          "$prefix/share/bash-completion/completions/mbsim")
    [ "$got" = sweep ] || fail "bash completion of 'mbsim sw': '$got', want 'sweep'"
fi
echo "ok: installed mbsim runs without the source tree"
