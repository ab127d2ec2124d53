/*
 * bench_engine.c -- throughput of the simulation engine on two synthetic
 * graphs. Plain text out; figures are quoted in docs/engine.md.
 *
 *   (a) compute-only 1F1B pipeline: p stages x m microbatches, every forward
 *       and backward split into `layers` tasks -> p*m*2*layers tasks
 *       (default 16 x 1024 x 2 x 32 = 1,048,576). Uniform durations, so the
 *       makespan must equal the closed form (m + p - 1) * 3f; printed as a
 *       sanity check.
 *   (b) flow-heavy all-to-all: G ranks, each with a compute stream and a comm
 *       stream, a NIC tx and rx link and one of S shared spine uplinks. Each
 *       round a rank computes, then sends `fan` flows to other ranks
 *       (tx_src -> spine -> rx_dst); the next round's compute waits for the
 *       previous round's exchange (default 256 ranks x 8 flows = 2048
 *       concurrent flows, 4 rounds).
 *
 * usage: bench_engine [p m layers] [G fan rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mb_engine.h"

static double mb_bench__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void mb_bench__report(const char *name, struct mb_engine *e, double t_build, double t_run)
{
    unsigned long long ev = mb_engine_n_events(e);
    size_t nt = mb_engine_n_tasks(e);
    printf("%s\n", name);
    printf("  tasks            %zu\n", nt);
    printf("  events           %llu\n", ev);
    printf("  flow re-solves   %llu\n", mb_engine_n_solves(e));
    printf("  max active flows %d\n", mb_engine_max_active_flows(e));
    printf("  build wall time  %.3f s\n", t_build);
    printf("  run wall time    %.3f s\n", t_run);
    printf("  events/s         %.3g\n", t_run > 0 ? (double)ev / t_run : 0.0);
    printf("  tasks/s          %.3g\n", t_run > 0 ? (double)nt / t_run : 0.0);
    printf("  simulated time   %.6f s\n", mb_engine_makespan(e));
}

static int mb_bench__bench_pipeline(int p, int m, int layers)
{
    double f = 1e-3; /* forward time of one microbatch on one stage */
    double t0 = mb_bench__now_s();
    struct mb_engine *e = mb_engine_new();
    /* first and last task of F(s,i) and B(s,i), for the p2p dependencies */
    size_t pm = (size_t)p * (size_t)m;
    int *f_first = malloc(pm * sizeof(int)), *f_last = malloc(pm * sizeof(int));
    int *b_first = malloc(pm * sizeof(int)), *b_last = malloc(pm * sizeof(int));
    for (int s = 0; s < p; s++) {
        int st = mb_engine_add_stream(e);
        /* 1F1B order: w warm-up forwards, then F/B pairs, then the drain */
        int w = p - 1 - s < m ? p - 1 - s : m;
        int nf = 0, nb = 0;
        for (int k = 0; k < 2 * m; k++) {
            int fwd = nf < w || (nf < m && (k - w) % 2 == 0);
            int i = fwd ? nf++ : nb++;
            double d = (fwd ? f : 2 * f) / layers;
            struct mb_task_desc td = {.stream = st, .duration = d, .kind = fwd, .tag = i};
            int first = -1, last = -1;
            for (int l = 0; l < layers; l++) {
                last = mb_engine_add_task(e, &td);
                if (l == 0)
                    first = last;
            }
            if (fwd) {
                f_first[(size_t)s * m + i] = first;
                f_last[(size_t)s * m + i] = last;
            } else {
                b_first[(size_t)s * m + i] = first;
                b_last[(size_t)s * m + i] = last;
            }
        }
    }
    for (int s = 0; s < p; s++)
        for (int i = 0; i < m; i++) {
            if (s > 0)
                mb_engine_add_dep(e, f_last[(size_t)(s - 1) * m + i], f_first[(size_t)s * m + i]);
            if (s < p - 1)
                mb_engine_add_dep(e, b_last[(size_t)(s + 1) * m + i], b_first[(size_t)s * m + i]);
        }
    free(f_first);
    free(f_last);
    free(b_first);
    free(b_last);
    double t1 = mb_bench__now_s();
    struct mb_err err;
    mb_err_clear(&err);
    int rc = mb_engine_run(e, &err);
    double t2 = mb_bench__now_s();
    if (rc) {
        fprintf(stderr, "bench_engine: %s\n", err.msg);
        mb_engine_free(e);
        return 1;
    }
    char name[160];
    snprintf(name, sizeof name, "(a) compute-only 1F1B pipeline: p=%d m=%d layers=%d", p, m, layers);
    mb_bench__report(name, e, t1 - t0, t2 - t1);
    double expect = (m + p - 1) * 3 * f;
    printf("  closed form      %.6f s (%s)\n", expect,
           mb_dbl_eq(expect, mb_engine_makespan(e)) ? "match" : "MISMATCH");
    mb_engine_free(e);
    return mb_dbl_eq(expect, mb_engine_makespan(e)) ? 0 : 1;
}

static int mb_bench__bench_flows(int G, int fan, int rounds)
{
    const int S = 16; /* spine uplinks */
    double t0 = mb_bench__now_s();
    struct mb_engine *e = mb_engine_new();
    int *tx = malloc((size_t)G * sizeof(int)), *rx = malloc((size_t)G * sizeof(int));
    int spine[16];
    for (int g = 0; g < G; g++) {
        tx[g] = mb_engine_add_link(e, 50e9);
        rx[g] = mb_engine_add_link(e, 50e9);
    }
    for (int k = 0; k < S; k++)
        spine[k] = mb_engine_add_link(e, 400e9);
    int *comp = malloc((size_t)G * sizeof(int)), *comm = malloc((size_t)G * sizeof(int));
    for (int g = 0; g < G; g++) {
        comp[g] = mb_engine_add_stream(e);
        comm[g] = mb_engine_add_stream(e);
    }
    struct mb_flow_desc *fl = malloc((size_t)fan * sizeof *fl);
    int *prev_x = malloc((size_t)G * sizeof(int));
    for (int r = 0; r < rounds; r++) {
        for (int g = 0; g < G; g++) {
            struct mb_task_desc c = {.stream = comp[g],
                                     .duration = 1e-3 * (1 + (g * 7 + r * 3) % 11 * 0.05)};
            int ct = mb_engine_add_task(e, &c);
            if (r > 0)
                mb_engine_add_dep(e, prev_x[g], ct);
            for (int k = 0; k < fan; k++) {
                int dst = (g + 1 + k * (G / fan > 1 ? G / fan : 1) + r) % G;
                if (dst == g)
                    dst = (dst + 1) % G;
                fl[k].bytes = 8e6 * (1 + ((g * 13 + k * 5 + r) % 17) * 0.125);
                fl[k].n_links = 3;
                fl[k].links[0] = tx[g];
                fl[k].links[1] = spine[(g + k) % S];
                fl[k].links[2] = rx[dst];
                fl[k].bound = 0;
            }
            struct mb_task_desc x = {.stream = comm[g], .duration = 5e-6, .n_flows = fan,
                                     .flows = fl};
            int xt = mb_engine_add_task(e, &x);
            mb_engine_add_dep(e, ct, xt);
            prev_x[g] = xt;
        }
    }
    free(fl);
    free(prev_x);
    free(tx);
    free(rx);
    free(comp);
    free(comm);
    double t1 = mb_bench__now_s();
    struct mb_err err;
    mb_err_clear(&err);
    int rc = mb_engine_run(e, &err);
    double t2 = mb_bench__now_s();
    if (rc) {
        fprintf(stderr, "bench_engine: %s\n", err.msg);
        mb_engine_free(e);
        return 1;
    }
    char name[160];
    snprintf(name, sizeof name, "(b) flow-heavy all-to-all: ranks=%d fan=%d rounds=%d links=%d "
             "flows=%d", G, fan, rounds, 2 * G + S, G * fan * rounds);
    mb_bench__report(name, e, t1 - t0, t2 - t1);
    unsigned long long ns = mb_engine_n_solves(e);
    printf("  re-solves/s      %.3g\n", t2 > t1 ? (double)ns / (t2 - t1) : 0.0);
    printf("  flows/s          %.3g\n", t2 > t1 ? (double)G * fan * rounds / (t2 - t1) : 0.0);
    mb_engine_free(e);
    return 0;
}

int main(int argc, char **argv)
{
    int p = 16, m = 1024, layers = 32, G = 256, fan = 8, rounds = 4;
    if (argc >= 4) {
        p = atoi(argv[1]);
        m = atoi(argv[2]);
        layers = atoi(argv[3]);
    }
    if (argc >= 7) {
        G = atoi(argv[4]);
        fan = atoi(argv[5]);
        rounds = atoi(argv[6]);
    }
    if (p < 1 || m < 1 || layers < 1 || G < 2 || fan < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_engine [p m layers] [G fan rounds]\n");
        return 2;
    }
    int rc = mb_bench__bench_pipeline(p, m, layers);
    printf("\n");
    rc |= mb_bench__bench_flows(G, fan, rounds);
    return rc;
}
