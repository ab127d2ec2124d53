#!/bin/sh
# check_architecture.sh -- the rooms of docs/architecture.md, held against the code.
#
#   scripts/check_architecture.sh BUILD_DIR
#
# Checks, from the sources and the object files of a configured and built tree (nm reads which
# file calls which: an arrow is a call or a data reference from one file to a name another defines):
#   1. no room (a folder's own .c/.h files) holds more than a third of the product's lines;
#   2. no .c/.h file over 1500 lines, no C function over 150 lines (tests included);
#   3. no circle between files (A calls into B and B, directly or not, back into A);
#   4. every arrow between rooms is one docs/architecture.md's table of rooms allows: nothing runs back
#      up, and the engine calls into no model, topology, calibration or CLI code.
# Exit 0 when all hold, 1 with each violation on stderr. Needs sh, awk, find, nm (binutils).
set -u
build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2
fail=0
bad() { echo "check_architecture: $*" >&2; fail=1; }

# The layering is docs/architecture.md's table of rooms: its first column the room, its last the rooms
# that room may call into (it may always call into itself). One source for the docs and this check.
layers=$(awk -F'|' '/^## The rooms/ { on = 1; next } /^## / { on = 0 }
    on && $2 ~ /^ `[a-z\/]+\/` $/ {
        r = $2; gsub(/[ `]/, "", r); sub(/\/$/, "", r); printf "%s:", r
        n = split($(NF - 1), d, ","); for (i = 1; i <= n; i++) { x = d[i]; gsub(/[ `—]/, "", x); if (x != "") printf " %s", x }
        printf "\n" }' docs/architecture.md)
[ -n "$layers" ] || { echo "check_architecture: no table of rooms in docs/architecture.md" >&2; exit 2; }

product=$(find sim topology workloads calibration bench -name '*.[ch]' -not -path '*/tests/*' | sort)
# 1. rooms
echo "$product" | xargs wc -l | awk '
    $2 != "total" { n = split($2, p, "/"); d = p[1]; for (i = 2; i < n; i++) d = d "/" p[i]; room[d] += $1; all += $1 }
    END { for (d in room) if (3 * room[d] > all) { printf "room %s holds %d of %d product lines (over a third)\n", d, room[d], all; bad = 1 }
          exit bad }' >&2 || fail=1

# 2. files and functions
all_c=$(find sim topology workloads calibration bench tests -name '*.[ch]' | sort)
echo "$all_c" | xargs wc -l | awk '$2 != "total" && $1 > 1500 { printf "%s: %d lines (over 1500)\n", $2, $1; bad = 1 } END { exit bad }' >&2 || fail=1
echo "$all_c" | grep '\.c$' | xargs awk '
    FNR == 1 { start = 0 }
    /^\{/ { start = FNR; name = prev; next }
    /^\}/ { if (start && FNR - start + 1 > 150) { printf "%s:%d: %s is %d lines (over 150)\n", FILENAME, start, name, FNR - start + 1; bad = 1 } start = 0; next }
    /^[A-Za-z_]/ { prev = $0 }
    END { exit bad }' >&2 || fail=1

# 3. and 4. arrows from the object files: "file defines SYM" and "file uses SYM"
objs=$(find "$build" -name '*.c.o' -path '*/CMakeFiles/*' | grep -v '/tests/' | sort)
[ -n "$objs" ] || { bad "no object files under $build (build it first)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in $objs; do
    rel=${o#"$build"/}
    src="${rel%%/CMakeFiles/*}/${rel#*.dir/}"
    src=${src%.o}
    src=${src#./}
    nm -g "$o" 2>/dev/null | awk -v f="$src" 'NF == 3 && $2 ~ /[TDBRC]/ { print "D", f, $3 } NF == 2 && $1 == "U" { print "U", f, $2 }'
done > "$tmp/syms"
echo "$layers" | awk 'NF { r = $1; sub(":", "", r); printf "%s", r; for (i = 2; i <= NF; i++) printf " %s", $i; printf "\n" }' > "$tmp/layers"
awk -v layers="$tmp/layers" '
    function room(f,   n, p, i, d) {   # the longest room of the layering that holds f
        best = ""
        for (r in allow) if (index(f, r "/") == 1 && length(r) > length(best)) best = r
        return best
    }
    BEGIN { while ((getline l < layers) > 0) { n = split(l, w, " "); allow[w[1]] = " "; for (i = 2; i <= n; i++) allow[w[1]] = allow[w[1]] w[i] " " } }
    $1 == "D" { def[$3] = (def[$3] == "" ? $2 : def[$3]) }
    $1 == "U" { use[++nu] = $2 SUBSEP $3 }
    END {
        for (k = 1; k <= nu; k++) {
            split(use[k], u, SUBSEP); f = u[1]; d = def[u[2]]
            if (d == "" || d == f) continue
            if (!((f, d) in edge)) { edge[f, d] = u[2]; out[f] = out[f] " " d }
            rf = room(f); rd = room(d)
            if (rf != rd && rf != "" && rd != "" && index(allow[rf], " " rd " ") == 0) {
                printf "%s calls %s of %s: room %s may not call into %s\n", f, u[2], d, rf, rd; bad = 1
            }
        }
        # circles: a file that reaches itself (depth-first search from each file)
        for (f in out) {
            delete seen; top = 0; stack[++top] = f
            while (top > 0) {
                x = stack[top--]; n = split(out[x], nx, " ")
                for (i = 1; i <= n; i++) {
                    y = nx[i]
                    if (y == f) { printf "circle: %s reaches itself through %s\n", f, x; bad = 1; top = 0; break }
                    if (!(y in seen)) { seen[y] = 1; stack[++top] = y }
                }
            }
        }
        exit bad
    }' "$tmp/syms" >&2 || fail=1

[ "$fail" = 0 ] && echo "check_architecture: rooms, file and function sizes, circles and layering hold"
exit "$fail"
