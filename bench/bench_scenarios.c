/*
 * bench_scenarios.c -- wall time and events/s of `mbsim run` on every shipped
 * scenario (simulation only: load once, simulate N times, report the median).
 *
 *   bench_scenarios [N] [scenario.yaml ...]   (default: every scenarios/NAME.yaml, N = 5)
 *
 * Output: one TSV row per scenario: name, tasks, events, median wall s,
 * events per second, step time s (so figures can be compared across machines
 * as ratios).
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>

#include "mb_scenario.h"
#include "mb_step.h"

static int mb_bench__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int mb_bench__bench(const char *path, int n)
{
    struct mb_scenario s;
    struct mb_result r;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_load(path, &s, &e)) {
        char buf[MB_ERR_TEXT_LEN];
        mb_err_format(&e, buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
        return 1;
    }
    double *w = malloc((size_t)n * sizeof *w);
    for (int i = 0; i < n; i++) {
        if (mb_step_simulate(&s, &r, &e)) {
            fprintf(stderr, "%s: %s\n", path, e.msg);
            free(w);
            mb_scenario_free(&s);
            return 1;
        }
        w[i] = r.sim_wall_s;
    }
    qsort(w, (size_t)n, sizeof *w, mb_bench__cmp);
    double med = w[n / 2];
    printf("%s\t%zu\t%llu\t%.4f\t%.3g\t%.4f\n", s.name, r.tasks, r.events, med, r.events / med, r.step_time_s);
    free(w);
    mb_scenario_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 5, rc = 0;
    if (n < 1)
        n = 1;
    printf("scenario\ttasks\tevents\twall_s_median\tevents_per_s\tstep_time_s\n");
    if (argc > 2) {
        for (int i = 2; i < argc; i++)
            rc |= mb_bench__bench(argv[i], n);
        return rc;
    }
    glob_t g;
    if (glob("scenarios/*.yaml", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            rc |= mb_bench__bench(g.gl_pathv[i], n);
        globfree(&g);
    }
    return rc;
}
