#!/bin/sh
# docs_ci.sh -- the GitHub Actions example of docs/ci.md ("The whole job") can run as written
# (issue 36, part 6: it never checked mbsim out):
#   - every folder a `run:` step builds from or runs a script of (cmake -S DIR, DIR/scripts/...) is the
#     `path:` of an actions/checkout step above it, and mbsim's tests find ../shared beside it;
#   - the packages installed are the README's Quick start list (and gnuplot-nox), the build is the
#     README's cmake configure and build, and ctest runs on that build before mbsim is installed;
#   - the script it runs exists in this tree and takes the options given (its usage line), and every
#     option given to `mbsim validate` is one `mbsim validate --help` lists.
#
#   docs_ci.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
# the YAML block that starts with "validate-cluster:"
awk '/^```yaml/ { inb = 1; buf = ""; next } /^```/ { if (inb && buf ~ /^validate-cluster:/) print buf; inb = 0; next }
     inb { buf = buf $0 "\n" }' docs/ci.md > "$tmp/job.yaml"
[ -s "$tmp/job.yaml" ] || fail "docs/ci.md has no validate-cluster: example"
grep -q "uses: actions/checkout@" "$tmp/job.yaml" || fail "no actions/checkout step"

# the folders checked out, in order, and the first line that uses each
checked=""
n=0
while IFS= read -r line; do
    n=$((n + 1))
    case $line in
        *"with:"*"path: "*)
            d=$(echo "$line" | sed 's/.*path: *\([^,} ]*\).*/\1/')
            checked="$checked $d" ;;
        *"- run:"*)
            for d in $(echo "$line" | sed -n 's/.*cmake -S \([^ ]*\) .*/\1/p') \
                     $(echo "$line" | grep -o '[A-Za-z0-9_.-]*/scripts/' | sed 's|/scripts/||'); do
                case " $checked " in *" $d "*) ;; *) fail "line $n uses '$d' before any checkout puts it there: $line" ;; esac
            done
            case $line in *ctest*) ctest_at=$n ;; esac
            case $line in *"cmake --install"*) install_at=$n ;; esac ;;
    esac
done < "$tmp/job.yaml"
case " $checked " in *" mbsim "*) ;; *) fail "mbsim is never checked out (paths:$checked)" ;; esac
case " $checked " in *" shared "*) ;; *) fail "../shared of mbsim's tests is never checked out (paths:$checked)" ;; esac
[ -n "${ctest_at:-}" ] || fail "no ctest step"
[ -n "${install_at:-}" ] && [ "$ctest_at" -lt "$install_at" ] || fail "ctest does not run before the install"

# the README's Quick start: its packages, its configure and build commands
readme=$(grep -m1 '^apt-get update && apt-get install' README.md)
[ -n "$readme" ] || fail "README.md: no Quick start apt-get line"
apt=$(grep 'apt-get install' "$tmp/job.yaml")
for p in $(echo "$readme" | sed 's/.*install -y \([^&]*\)&&.*/\1/'); do
    echo " $apt " | grep -q " $p " || fail "package $p of the README is not installed by the example"
done
echo "$readme" | grep -q -- "-B build -DCMAKE_BUILD_TYPE=Release" || fail "README's configure changed: update this test"
grep -q "cmake -S mbsim -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j" "$tmp/job.yaml" ||
    fail "the example's build is not the README's"
grep -q "ctest --test-dir build --output-on-failure" "$tmp/job.yaml" || fail "the example's ctest is not the README's"

# what it runs exists
for s in $(grep -o 'mbsim/scripts/[A-Za-z0-9_.-]*' "$tmp/job.yaml"); do
    [ -x "${s#mbsim/}" ] || [ -f "${s#mbsim/}" ] || fail "$s is not in the tree"
done
"$bin" validate --help > "$tmp/help" || fail "mbsim validate --help"
for o in $(grep 'mbsim" validate' "$tmp/job.yaml" | grep -o -- '--[a-z-]*'); do
    grep -q -- "$o" "$tmp/help" || fail "mbsim validate has no $o"
done
# the options given to ci_validate.sh are in its usage line
usage=$(sh scripts/ci_validate.sh 2>&1 | grep '^usage:')
for o in $(grep -o 'ci_validate.sh .*' "$tmp/job.yaml" | grep -o -- ' -[a-z]' | tr -d ' '); do
    echo "$usage" | grep -q -- "\[$o " || fail "ci_validate.sh has no option $o: $usage"
done
echo "docs_ci: the example checks out mbsim and shared first, builds and tests as the README, runs what exists"
