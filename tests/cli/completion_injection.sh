#!/bin/sh
# completion_injection.sh -- the bash completion (scripts/mbsim-completion.bash) offers the names
# `mbsim models` and `mbsim systems` list, which are file names of the data directory, as they
# are written: compgen -W expanded $(...), backquotes and $VARIABLES in them, so a model file
# named '$(touch injected).yaml' ran `touch injected` whenever `mbsim run --model <TAB>` was
# completed (issue 37, Injection; docs/robustness.md, "Children"). The script before the fix ran
# it for '$(touch${IFS}injected).yaml' (compgen -W expands each word of its list).
#
#   completion_injection.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
src=$(pwd)
command -v bash > /dev/null 2>&1 || { echo "SKIP: bash not installed"; exit 77; }
case $bin in /*) ;; *) bin=$src/$bin ;; esac

# a data directory whose model and system files carry hostile names, and `mbsim` on PATH
data=$tmp/data
mkdir -p "$data/workloads/models" "$data/topology/systems" "$tmp/bin" "$tmp/work"
cp "$src/workloads/models/llama3_8b.yaml" "$data/workloads/models/"
cp "$src/workloads/models/llama3_8b.yaml" "$data/workloads/models/\$(touch injected).yaml"
cp "$src/workloads/models/llama3_8b.yaml" "$data/workloads/models/\`touch injected\`.yaml"
cp "$src/workloads/models/llama3_8b.yaml" "$data/workloads/models/\$(touch\${IFS}injected).yaml"
cp "$src/workloads/models/llama3_8b.yaml" "$data/workloads/models/\${IFS}x.yaml"
cp "$src/topology/systems/dgx_h100.yaml" "$data/topology/systems/\$(touch injected).yaml"
ln -s "$bin" "$tmp/bin/mbsim"

cd "$tmp/work" || fail "cd"
out=$(MBSIM_DATA_DIR=$data PATH="$tmp/bin:$PATH" bash -c '
    . "$1/scripts/mbsim-completion.bash"
    complete_line() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _mbsim; printf "%s|" "${COMPREPLY[@]}"; echo; }
    complete_line mbsim run --model ""
    complete_line mbsim run --model "\$"
    complete_line mbsim collective --system ""
    complete_line mbsim topo ""
    complete_line mbsim sw
    complete_line mbsim plot me
' sh "$src") || fail "bash completion failed: $out"
[ ! -e injected ] || fail "completing ran the command in a file name: $out"
models=$(echo "$out" | sed -n 1p)
case $models in *'$(touch injected)|'*) ;; *) fail "--model: no literal '\$(touch injected)' in: $models" ;; esac
case $models in *'`touch injected`|'*) ;; *) fail "--model: no literal backquoted name in: $models" ;; esac
case $models in *'llama3_8b|'*) ;; *) fail "--model: no llama3_8b in: $models" ;; esac
# "$" completes the three names that start with a dollar (in mbsim models' byte order), not llama3_8b
[ "$(echo "$out" | sed -n 2p)" = '$(touch injected)|$(touch${IFS}injected)|${IFS}x|' ] || fail "--model \$: $(echo "$out" | sed -n 2p)"
case $(echo "$out" | sed -n 3p) in *'$(touch injected)|'*) ;; *) fail "--system: $(echo "$out" | sed -n 3p)" ;; esac
case $(echo "$out" | sed -n 4p) in *'$(touch injected)|'*) ;; *) fail "topo: $(echo "$out" | sed -n 4p)" ;; esac
[ "$(echo "$out" | sed -n 5p)" = 'sweep|' ] || fail "mbsim sw: $(echo "$out" | sed -n 5p)"
[ "$(echo "$out" | sed -n 6p)" = 'memory|' ] || fail "mbsim plot me: $(echo "$out" | sed -n 6p)"
echo "completion_injection: hostile model and system names completed as written, nothing run"
