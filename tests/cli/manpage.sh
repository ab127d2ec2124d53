#!/bin/sh
# manpage.sh -- docs/mbsim.1 renders without warnings (man -l, else groff -man),
# and lists every command of `mbsim --help`. Skipped (exit 77) when neither
# man nor groff is installed.
#
#   manpage.sh MBSIM_BINARY      (run from the source tree; CTest does)
set -u
bin=$1
page=docs/mbsim.1
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if command -v groff > /dev/null 2>&1; then
    groff -man -Tutf8 -ww -z "$page" > "$tmp/out" 2> "$tmp/err" || fail "groff: $(cat "$tmp/err")"
    [ ! -s "$tmp/err" ] || fail "groff warnings: $(cat "$tmp/err")"
fi
if command -v man > /dev/null 2>&1; then
    # man(1) passes warnings from the formatter through on stderr
    MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings -l "$page" > "$tmp/man.out" 2> "$tmp/man.err" ||
        MANWIDTH=80 man -l "$page" > "$tmp/man.out" 2> "$tmp/man.err" || fail "man -l: $(cat "$tmp/man.err")"
    [ ! -s "$tmp/man.err" ] || fail "man -l warnings: $(cat "$tmp/man.err")"
elif ! command -v groff > /dev/null 2>&1; then
    echo "skip: neither man nor groff installed"
    exit 77
fi

# every command of the usage text has an entry (.B/.BI/.BR "mbsim COMMAND ...")
"$bin" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} /^$/ && on {exit}' | sort -u > "$tmp/cmds"
[ -s "$tmp/cmds" ] || fail "no commands read from mbsim --help"
while read -r c; do
    grep -Eq "^\.B[IR]? \"?mbsim $c( |\"|$)" "$page" || fail "$page does not describe '$c'"
done < "$tmp/cmds"
echo "ok: $page renders cleanly and lists $(wc -l < "$tmp/cmds") commands"
