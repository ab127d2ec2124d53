#!/bin/sh
# help_complete.sh -- `mbsim --help`, each command's --help and the bash completion
# (scripts/mbsim-completion.bash) agree (issue 36, part 6: `plot memory` was missing from both):
#   - every command of `mbsim --help`'s command list is completed after `mbsim `;
#   - every plot kind `mbsim plot` accepts (the list its error for an unknown kind gives) is in the
#     `plot` line of `mbsim --help` and is completed after `mbsim plot `;
#   - every calibrate kind of `mbsim --help` is completed after `mbsim calibrate `;
#   - every long option of a command's usage lines and option list (`mbsim CMD --help`) is completed
#     after `mbsim CMD --` (for calibrate: each kind's).
#
#   help_complete.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
command -v bash > /dev/null 2>&1 || { echo "SKIP: bash not installed"; exit 77; }
complete_words() { # WORD... : what the completion offers for `mbsim WORD... ` (last word: the prefix)
    bash -c '. scripts/mbsim-completion.bash; COMP_WORDS=(mbsim "$@"); COMP_CWORD=$#; _mbsim
             printf "%s\n" "${COMPREPLY[@]}"' sh "$@" | sort -u | tr '\n' ' '
}
has() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
"$bin" --help > "$tmp/main" || fail "mbsim --help"

cmds=$(sed -n '/^commands:/,/^$/p' "$tmp/main" | awk '/^  [a-z]/ { print $1 }' | sort -u)
[ -n "$cmds" ] || fail "no command list in mbsim --help"
top=$(complete_words "")
for c in $cmds; do has "$top" "$c" || fail "completion of 'mbsim ' lacks $c (offers: $top)"; done

"$bin" plot no_such_kind x.json > /dev/null 2> "$tmp/err"
kinds=$(sed -n 's/.*expected one of: //p' "$tmp/err" | tr -d ',')
[ -n "$kinds" ] || fail "mbsim plot gave no kind list: $(cat "$tmp/err")"
plot_line=$(grep '^  plot ' "$tmp/main")
comp=$(complete_words plot "")
for k in $kinds; do
    echo "$plot_line" | grep -q "[ |]$k[ |]" || fail "mbsim --help's plot line lacks $k: $plot_line"
    has "$comp" "$k" || fail "completion of 'mbsim plot ' lacks $k (offers: $comp)"
done

calib=$(awk '$1 == "calibrate" { print $2 }' "$tmp/main" | sort -u)
comp=$(complete_words calibrate "")
for k in $calib; do has "$comp" "$k" || fail "completion of 'mbsim calibrate ' lacks $k (offers: $comp)"; done

options() { # CMD...: the long options of its usage lines and option list
    "$bin" "$@" --help 2>&1 | awk '/^usage:/ { u = 1 } u && /^$/ { u = 0 } u { print; next }
        /^  +(-[a-zA-Z], )?--[a-z]/ { print $1 " " $2 }' | grep -o -- '--[a-z][a-z-]*' | sort -u
}
check_opts() { # CMD...
    comp=$(complete_words "$@" --)
    for o in $(options "$@"); do has "$comp" "$o" || fail "completion of 'mbsim $* --' lacks $o (offers: $comp)"; done
}
for c in $cmds; do
    [ "$c" = calibrate ] || check_opts "$c"
done
for k in $calib; do check_opts calibrate "$k"; done
echo "help_complete: $(echo $cmds | wc -w) commands, plot kinds ($kinds), calibrate kinds and every option completed"
