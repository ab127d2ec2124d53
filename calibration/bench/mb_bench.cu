/*
 * mb_bench.cu -- GPU microbenchmarks that write an mbsim calibration overlay
 * table (base: <GPU> + measured:) directly; see docs/calibration.md,
 * "Importing profiles" and "GPU microbenchmark suite".
 *
 *   mbsim_bench --gpu H200 [--quick] > H200_measured.yaml
 *
 * Measures, on device 0: dense BF16 GEMMs through cuBLASLt over a shape sweep;
 * grouped GEMMs as a loop of cuBLASLt GEMMs (one per group, one stream --
 * an upper bound on a real grouped kernel's time); attention-shaped batched
 * GEMMs (QK^T and PV through cublasGemmStridedBatchedEx, no softmax: a proxy,
 * not flash attention, marked so in the sources); HBM bandwidth (device copy);
 * kernel launch latency (empty kernel); NCCL all-reduce among the visible
 * GPUs of this process (single-GPU: the 1-rank latency floor only).
 * Timing: CUDA events around `iters` back-to-back launches after warm-up; the
 * median of 5 repetitions.
 */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#ifdef MBSIM_BENCH_NCCL
#include <nccl.h>
#endif
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#define CK(x)                                                                                         \
    do {                                                                                              \
        cudaError_t e_ = (x);                                                                         \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)
#define CB(x)                                                                                         \
    do {                                                                                              \
        cublasStatus_t s_ = (x);                                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                            \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_);       \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)

static cudaStream_t g_stream;

template <class F> static double time_us(F f, int iters)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++)
        f();
    std::vector<double> reps;
    for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(a, g_stream));
        for (int i = 0; i < iters; i++)
            f();
        CK(cudaEventRecord(b, g_stream));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        reps.push_back(ms * 1e3 / iters);
    }
    std::sort(reps.begin(), reps.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return reps[reps.size() / 2];
}

struct Lt {
    cublasLtHandle_t h;
    void *ws;
    size_t ws_size = 64u << 20;
};

/* C[m,n] = A[m,k] B[k,n], BF16 in/out, FP32 accumulate; column-major as C^T = B^T A^T. */
static double lt_gemm_us(Lt &lt, const void *A, const void *B, void *C, int m, int n, int k, int iters)
{
    cublasLtMatmulDesc_t op;
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t la, lb, lc;
    CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, k, n)); /* B^T as col-major n x k */
    CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k)); /* A^T as col-major k x m */
    CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt.ws_size,
                                            sizeof lt.ws_size));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    CB(cublasLtMatmulAlgoGetHeuristic(lt.h, op, la, lb, lc, lc, pref, 1, &heur, &found));
    float alpha = 1, beta = 0;
    double us = -1;
    if (found)
        us = time_us([&] {
            CB(cublasLtMatmul(lt.h, op, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &heur.algo, lt.ws, lt.ws_size,
                              g_stream));
        }, iters);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    return us;
}

__global__ void mb_empty_kernel() {}

__global__ void mb_copy_kernel(const float4 *__restrict__ a, float4 *__restrict__ b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = a[i];
}

int main(int argc, char **argv)
{
    const char *gpu = NULL;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpu") && i + 1 < argc)
            gpu = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: mbsim_bench --gpu NAME [--quick] > TABLE.yaml\n");
            return 2;
        }
    }
    if (!gpu) {
        fprintf(stderr, "mbsim_bench: --gpu NAME (the shipped table to augment, e.g. H100, H200) is required\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaStreamCreate(&g_stream));
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));

    Lt lt;
    CB(cublasLtCreate(&lt.h));
    CK(cudaMalloc(&lt.ws, lt.ws_size));
    const size_t maxe = (size_t)16384 * 16384;
    void *A, *B, *C;
    CK(cudaMalloc(&A, maxe * 2));
    CK(cudaMalloc(&B, maxe * 2));
    CK(cudaMalloc(&C, maxe * 2));
    CK(cudaMemset(A, 0, maxe * 2));
    CK(cudaMemset(B, 0, maxe * 2));

    printf("# Measured by calibration/bench/mbsim_bench on %s (%s, %d SMs), %s.\n", prop.name, gpu,
           prop.multiProcessorCount, date);
    printf("schema_version: 1\ngpu: %s\nbase: \"%s\"\nmeasured:\n", gpu, gpu);
    printf("  source: \"mbsim_bench %s on %s, %s (cuBLASLt BF16, median of 5 reps)\"\n", gpu, prop.name, date);

    /* dense GEMM sweep */
    const int sq[] = {256, 512, 1024, 2048, 4096, 8192, 16384};
    std::vector<std::vector<int>> shapes;
    for (int s : sq)
        shapes.push_back({s, s, s});
    const int tr[][3] = {{4096, 4096, 256},  {8192, 1024, 4096}, {16384, 4096, 4096}, {4096, 14336, 4096},
                         {4096, 4096, 14336}, {2048, 8192, 8192}, {1024, 16384, 4096}, {8192, 28672, 8192}};
    for (auto &t : tr)
        shapes.push_back({t[0], t[1], t[2]});
    printf("  gemm:\n");
    for (auto &s : shapes) {
        if (quick && (double)s[0] * s[1] * s[2] > 1e12)
            continue;
        double us = lt_gemm_us(lt, A, B, C, s[0], s[1], s[2], 20);
        if (us <= 0)
            continue;
        double tf = 2.0 * s[0] * s[1] * s[2] / (us * 1e-6) / 1e12;
        printf("    - {prec: bf16, m: %d, n: %d, k: %d, achieved: %.4g TFLOP/s, time: %.4g us, source: \"cuBLASLt "
               "heuristic algo 0\"}\n",
               s[0], s[1], s[2], tf, us);
        fflush(stdout);
    }

    /* grouped GEMM as a loop of per-group GEMMs (N x K = 4096 x 7168 as DeepGEMM's reference) */
    printf("  grouped_gemm:\n");
    const int tok[] = {64, 128, 256, 512, 1024, 2048, 4096};
    const int G = 8, N = 4096, K = 7168;
    for (int t : tok) {
        /* the G per-group GEMMs run back to back: time one and multiply by G */
        double one = lt_gemm_us(lt, A, B, C, t, N, K, 10);
        double tf = 2.0 * G * t * (double)N * K / (G * one * 1e-6) / 1e12;
        printf("    - {prec: bf16, groups: %d, tokens: %d, n: %d, k: %d, achieved: %.4g TFLOP/s, time: %.4g us, "
               "source: \"loop of %d cuBLASLt GEMMs (no grouped kernel; upper bound on time)\"}\n",
               G, t, N, K, tf, G * one, G);
        fflush(stdout);
    }

    /* attention-shaped batched GEMMs: QK^T [s x d].[d x s] and PV [s x s].[s x d], batch = b*h */
    cublasHandle_t bh;
    CB(cublasCreate(&bh));
    CB(cublasSetStream(bh, g_stream));
    printf("  attention:\n");
    const int seqs[] = {512, 1024, 2048, 4096, 8192};
    for (int s : seqs) {
        const int d = 128;
        int batch = (int)std::min<double>(32.0, (double)maxe / ((double)s * s));
        if (batch < 1)
            continue;
        float alpha = 1, beta = 0;
        double us = time_us([&] {
            CB(cublasGemmStridedBatchedEx(bh, CUBLAS_OP_T, CUBLAS_OP_N, s, s, d, &alpha, A, CUDA_R_16BF, d,
                                          (long long)s * d, B, CUDA_R_16BF, d, (long long)s * d, &beta, C, CUDA_R_16BF,
                                          s, (long long)s * s, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            CB(cublasGemmStridedBatchedEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, d, s, s, &alpha, B, CUDA_R_16BF, d,
                                          (long long)s * d, C, CUDA_R_16BF, s, (long long)s * s, &beta, A, CUDA_R_16BF,
                                          d, (long long)s * d, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }, 10);
        double tf = 4.0 * batch * (double)s * s * d / (us * 1e-6) / 1e12;
        printf("    - {prec: bf16, causal: false, bwd: false, head_dim: %d, batch_heads: %d, seq: %d, achieved: %.4g "
               "TFLOP/s, time: %.4g us, source: \"PROXY: unfused batched QK^T + PV GEMMs, no softmax (not flash "
               "attention)\"}\n",
               d, batch, s, tf, us);
        fflush(stdout);
    }

    /* HBM bandwidth (read + write of a 2 GiB buffer) and launch latency */
    size_t bytes = quick ? ((size_t)256 << 20) : ((size_t)1 << 30);
    float4 *x, *y;
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    size_t n4 = bytes / sizeof(float4);
    double cu = time_us([&] { mb_copy_kernel<<<prop.multiProcessorCount * 8, 512, 0, g_stream>>>(x, y, n4); }, 20);
    double bw = 2.0 * bytes / (cu * 1e-6);
    double tiny = time_us([&] { mb_copy_kernel<<<1, 32, 0, g_stream>>>(x, y, 32); }, 200);
    double peak_bw = 0;
#if CUDART_VERSION < 13000
    peak_bw = 2.0 * prop.memoryClockRate * 1e3 * (prop.memoryBusWidth / 8.0);
#endif
    int clock_khz = 0, bus = prop.memoryBusWidth;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0);
    if (peak_bw <= 0)
        peak_bw = 2.0 * clock_khz * 1e3 * (bus / 8.0);
    printf("  membound: {eff: %.4f, floor: %.4g us, source: \"copy kernel %zu MiB: %.4g GB/s of %.4g GB/s "
           "(memory clock x bus width); floor = 32-thread copy kernel time\"}\n",
           std::min(1.0, bw / peak_bw), tiny, bytes >> 20, bw / 1e9, peak_bw / 1e9);
    CK(cudaStreamSynchronize(g_stream));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    struct timespec t0, t1;
    const int L = 2000;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < L; i++)
        mb_empty_kernel<<<1, 1, 0, g_stream>>>();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CK(cudaStreamSynchronize(g_stream));
    double launch_us = ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / L;
    printf("  launch: {time: %.4g us, source: \"host time per cudaLaunchKernel of an empty kernel, %d launches\"}\n",
           launch_us, L);

#ifdef MBSIM_BENCH_NCCL
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    std::vector<ncclComm_t> comms(ndev);
    std::vector<int> devs(ndev);
    for (int i = 0; i < ndev; i++)
        devs[i] = i;
    if (ncclCommInitAll(comms.data(), ndev, devs.data()) == ncclSuccess) {
        printf("  collectives:\n");
        std::vector<cudaStream_t> st(ndev);
        std::vector<void *> buf(ndev);
        const size_t maxb = (size_t)256 << 20;
        for (int i = 0; i < ndev; i++) {
            CK(cudaSetDevice(i));
            CK(cudaStreamCreate(&st[i]));
            CK(cudaMalloc(&buf[i], maxb));
        }
        for (size_t sz = 1 << 20; sz <= maxb; sz *= 4) {
            auto run = [&] {
                ncclGroupStart();
                for (int i = 0; i < ndev; i++)
                    ncclAllReduce(buf[i], buf[i], sz / 2, ncclBfloat16, ncclSum, comms[i], st[i]);
                ncclGroupEnd();
                for (int i = 0; i < ndev; i++)
                    CK(cudaStreamSynchronize(st[i]));
            };
            run();
            struct timespec c0, c1;
            const int it = 20;
            clock_gettime(CLOCK_MONOTONIC, &c0);
            for (int r = 0; r < it; r++)
                run();
            clock_gettime(CLOCK_MONOTONIC, &c1);
            double us = ((c1.tv_sec - c0.tv_sec) * 1e6 + (c1.tv_nsec - c0.tv_nsec) / 1e3) / it;
            double busbw = ndev > 1 ? sz / (us * 1e-6) * 2.0 * (ndev - 1) / ndev : 0;
            printf("    - {op: allreduce, group: %d, bytes: %zu B, time: %.4g us, busbw: %.4g GB/s, dtype: bf16, "
                   "source: \"ncclAllReduce, one process, %d visible GPU(s), host-timed incl. sync\"}\n",
                   ndev, sz, us, busbw / 1e9, ndev);
        }
        for (int i = 0; i < ndev; i++)
            ncclCommDestroy(comms[i]);
    }
#endif
    return 0;
}
