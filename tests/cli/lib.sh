# Shared prologue of the sweep scripts in tests/cli (sourced, not run):
# strict variables, no Slurm array variables from the caller's job, the
# binary under test in $bin, a temporary folder $tmp removed at exit unless
# KEEP is set, and fail MESSAGE.
set -u
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_STEP
bin=$1
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
