#!/bin/sh
# Build and run the GPU microbenchmark suite; write OUT_DIR/<GPU>_measured.yaml (a calibration
# overlay table: base: <GPU> + measured:) and the log. Usage: run_on_gpu.sh GPU OUT_DIR [--quick]
# Example: calibration/bench/run_on_gpu.sh H200 /tmp/out
set -eu
GPU=${1:?usage: run_on_gpu.sh GPU OUT_DIR [--quick]}
OUT=${2:?usage: run_on_gpu.sh GPU OUT_DIR [--quick]}
shift 2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${MBSIM_BENCH_BUILD:-/tmp/mbsim-bench-build}
mkdir -p "$OUT" "$BUILD"
# Standalone build of just the suite (no libyaml/hwloc needed on the GPU machine).
cmake -S "$ROOT/calibration/bench" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" >"$OUT/build.log" 2>&1
cmake --build "$BUILD" -j >>"$OUT/build.log" 2>&1
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true
"$BUILD/mbsim_bench" --gpu "$GPU" "$@" >"$OUT/${GPU}_measured.yaml" 2>"$OUT/bench.log"
echo "wrote $OUT/${GPU}_measured.yaml"
