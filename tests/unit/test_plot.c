/*
 * test_plot.c -- `mbsim plot`: every kind (validate, sweep, breakdown, gantt, memory) writes a
 * non-empty PNG (and one SVG) from real mbsim outputs; without gnuplot the
 * command says so and exits 1. The binary comes from $MBSIM_BIN (set by
 * CTest; $MBSIM_PLOT_BIN overrides it). Tests that need gnuplot are skipped
 * with a message when it is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "mb_util.h"

static char tmpdir[256];

static const char *bin(void)
{
    const char *b = getenv("MBSIM_PLOT_BIN");
    if (!b || !*b)
        b = getenv("MBSIM_BIN");
    assert_non_null(b);
    return b;
}

/* Run a shell command line, capture stdout+stderr, return the exit code. */
static int sh(const char *cmd, char **out)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0, got;
    char *buf = mb_malloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (cap - n < 4096) {
            cap *= 2;
            buf = mb_realloc(buf, cap);
        }
    }
    buf[n] = 0;
    int st = pclose(p);
    if (out)
        *out = buf;
    else
        mb_free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int have_plot_command(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s plot --help", bin());
    return sh(cmd, NULL) == 0;
}

static int have_gnuplot(void)
{
    return sh("command -v gnuplot", NULL) == 0;
}

#define NEED_PLOT()                                                                               \
    do {                                                                                          \
        if (!have_plot_command()) {                                                               \
            fprintf(stderr, "SKIP: '%s plot' is not available in this binary\n", bin());          \
            skip();                                                                               \
        }                                                                                         \
        if (!have_gnuplot()) {                                                                    \
            fprintf(stderr, "SKIP: gnuplot is not installed (apt-get install gnuplot-nox)\n");    \
            skip();                                                                               \
        }                                                                                         \
    } while (0)

/* The file exists, is non-empty and starts with the format's signature. */
static void assert_image(const char *path, int svg)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 1000);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char head[256] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    assert_true(n > 8);
    if (svg)
        assert_non_null(strstr(head, "<svg") ? strstr(head, "<svg") : strstr(head, "<?xml"));
    else
        assert_memory_equal(head, "\x89PNG\r\n\x1a\n", 8);
}

static void plot(const char *kind, const char *in, const char *out)
{
    char cmd[2048], *o;
    snprintf(cmd, sizeof cmd, "%s plot %s %s -o %s", bin(), kind, in, out);
    int rc = sh(cmd, &o);
    if (rc)
        fprintf(stderr, "%s\n%s\n", cmd, o);
    assert_int_equal(rc, 0);
    mb_free(o);
}

static void test_no_gnuplot(void **state)
{
    (void)state;
    if (!have_plot_command()) {
        fprintf(stderr, "SKIP: '%s plot' is not available in this binary\n", bin());
        skip();
    }
    char cmd[2048], *o;
    snprintf(cmd, sizeof cmd, "MBSIM_GNUPLOT=/nonexistent/gnuplot %s plot breakdown scenarios/gb200_ep32.yaml -o %s/x.png",
             bin(), tmpdir);
    assert_int_equal(sh(cmd, &o), 1);
    assert_non_null(strstr(o, "gnuplot not found"));
    mb_free(o);
    /* usage errors */
    snprintf(cmd, sizeof cmd, "%s plot nosuchkind x.json", bin());
    assert_int_equal(sh(cmd, NULL), 2);
    snprintf(cmd, sizeof cmd, "%s plot sweep x.tsv -o out.pdf", bin());
    assert_int_equal(sh(cmd, NULL), 2);
}

static void test_validate_plot(void **state)
{
    (void)state;
    NEED_PLOT();
    char cmd[2048], json[512], png[512];
    snprintf(json, sizeof json, "%s/validate.json", tmpdir);
    snprintf(png, sizeof png, "%s/validate.png", tmpdir);
    snprintf(cmd, sizeof cmd, "%s validate scenarios/h100_llama3_70b_3d.yaml scenarios/h100_qwen3_30b_a3b_ep8.yaml "
             "--json > %s", bin(), json);
    assert_int_equal(sh(cmd, NULL), 0);
    plot("validate", json, png);
    assert_image(png, 0);
    /* the documented TSV input */
    snprintf(png, sizeof png, "%s/validate_tsv.svg", tmpdir);
    plot("validate", "tests/data/sweep/validate_points.tsv", png);
    assert_image(png, 1);
    /* the 5 largest |error| are labelled with id and error: validate_worst.tsv has no
     * err_pct column, so it is (predicted - measured) / measured: p1 +1 %, m2 -2 %, p30 +30 %,
     * m40 -40 %, p5 +5 %, p60 +60 %, m3 -3 %; the SVG's text holds the labels */
    snprintf(png, sizeof png, "%s/validate_worst.svg", tmpdir);
    plot("validate", "tests/data/sweep/validate_worst.tsv", png);
    char cmd2[1024], *o;
    snprintf(cmd2, sizeof cmd2, "cat %s", png);
    assert_int_equal(sh(cmd2, &o), 0);
    static const char *const labelled[] = {">p60 +60%<", ">m40 -40%<", ">p30 +30%<", ">p5 +5%<", ">m3 -3%<"};
    for (int i = 0; i < 5; i++)
        assert_non_null(strstr(o, labelled[i]));
    assert_null(strstr(o, ">p1 +1%<"));
    assert_null(strstr(o, ">m2 -2%<"));
    assert_non_null(strstr(o, "y = x"));
    /* the fixture has rows of all three metrics: the x label names the three (it names only those present) */
    assert_non_null(strstr(o, "measured: tokens/s/GPU, model TFLOP/s/GPU, step time in s (by marker)"));
    mb_free(o);
    /* a bad number names its line; a header without the columns is refused */
    snprintf(cmd2, sizeof cmd2, "%s plot validate tests/data/sweep/validate_bad_number.tsv -o %s/bad.svg 2>&1", bin(),
             tmpdir);
    assert_int_equal(sh(cmd2, &o), 1);
    assert_non_null(strstr(o, "validate_bad_number.tsv:3: column 'measured': expected a positive number, got 'lots'"));
    mb_free(o);
}

static void test_sweep_plot(void **state)
{
    (void)state;
    NEED_PLOT();
    char cmd[2048], tsv[512], png[512];
    snprintf(tsv, sizeof tsv, "%s/sweep.tsv", tmpdir);
    snprintf(png, sizeof png, "%s/sweep.png", tmpdir);
    snprintf(cmd, sizeof cmd, "%s sweep tests/data/sweep/small.yaml --tsv %s", bin(), tsv);
    assert_int_equal(sh(cmd, NULL), 0);
    plot("sweep", tsv, png);
    assert_image(png, 0);
    /* regression: a sweep without a micro-batch axis (its left panel was a log axis at x = 0,
     * gnuplot failed and left a blank PNG) */
    snprintf(cmd, sizeof cmd, "%s sweep tests/data/sweep/no_mbs.yaml --progress 0 --tsv %s", bin(), tsv);
    assert_int_equal(sh(cmd, NULL), 0);
    snprintf(png, sizeof png, "%s/sweep_no_mbs.png", tmpdir);
    plot("sweep", tsv, png);
    assert_image(png, 0);
    /* regression: a row with fields missing is an error naming its line, not skipped;
     * no output is left behind */
    char *o;
    snprintf(png, sizeof png, "%s/malformed.png", tmpdir);
    snprintf(cmd, sizeof cmd, "%s plot sweep tests/data/sweep/malformed_row.tsv -o %s", bin(), png);
    assert_int_equal(sh(cmd, &o), 1);
    assert_non_null(strstr(o, "malformed_row.tsv:3: expected 23 tab-separated fields (as the header on line 1), got 19"));
    mb_free(o);
    struct stat st;
    assert_int_not_equal(stat(png, &st), 0);
    /* regression: every configuration OOM (all_oom.yaml: 140 GB of weights per rank on an
     * 80 GB GPU) left the throughput panel empty and gnuplot stopped on its x range; mbsim says
     * why, exits 1 (bad input) and writes no PNG */
    snprintf(cmd, sizeof cmd, "%s sweep tests/data/sweep/all_oom.yaml --progress 0 --tsv %s", bin(), tsv);
    assert_int_equal(sh(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd, "awk -F'\\t' '/^#/ { next } !h { h = 1; for (i = 1; i <= NF; i++) if ($i == \"oom\") "
             "c = i; next } { n++ } $c != 1 { bad = 1 } END { exit bad || n != 2 }' %s", tsv);
    assert_int_equal(sh(cmd, NULL), 0); /* the premise: two rows, both OOM */
    snprintf(png, sizeof png, "%s/all_oom.png", tmpdir);
    snprintf(cmd, sizeof cmd, "%s plot sweep %s -o %s", bin(), tsv, png);
    assert_int_equal(sh(cmd, &o), 1);
    assert_non_null(strstr(o, "sweep.tsv: all 2 simulated configurations are out of memory (reserved "));
    assert_non_null(strstr(o, "no throughput to plot"));
    assert_null(strstr(o, "gnuplot"));
    mb_free(o);
    assert_int_not_equal(stat(png, &st), 0);
}

static void test_breakdown_plot(void **state)
{
    (void)state;
    NEED_PLOT();
    char cmd[2048], json[512], png[512];
    snprintf(json, sizeof json, "%s/run.json", tmpdir);
    snprintf(png, sizeof png, "%s/breakdown.png", tmpdir);
    snprintf(cmd, sizeof cmd, "%s run scenarios/gb200_ep32.yaml --json > %s", bin(), json);
    assert_int_equal(sh(cmd, NULL), 0);
    plot("breakdown", json, png);
    assert_image(png, 0);
    /* wrong input: a clear message, exit 1 */
    char *o;
    snprintf(cmd, sizeof cmd, "%s plot breakdown tests/data/sweep/validate_points.tsv -o %s/bad.png", bin(), tmpdir);
    assert_int_equal(sh(cmd, &o), 1);
    mb_free(o);
}

static void test_gantt_plot(void **state)
{
    (void)state;
    NEED_PLOT();
    char cmd[2048], trace[512], png[512];
    snprintf(trace, sizeof trace, "%s/trace.json", tmpdir);
    snprintf(png, sizeof png, "%s/gantt.png", tmpdir);
    snprintf(cmd, sizeof cmd, "%s run scenarios/gb200_ep32.yaml --trace %s > /dev/null", bin(), trace);
    assert_int_equal(sh(cmd, NULL), 0);
    plot("gantt", trace, png);
    assert_image(png, 0);
    /* a file that is not a trace: a clear message, exit 1 */
    char *o;
    snprintf(cmd, sizeof cmd, "%s plot gantt tests/data/sweep/validate_points.tsv -o %s/bad.png", bin(), tmpdir);
    assert_int_equal(sh(cmd, &o), 1);
    mb_free(o);
}

static void test_memory_plot(void **state)
{
    (void)state;
    NEED_PLOT();
    char cmd[2048], json[512], png[512];
    snprintf(json, sizeof json, "%s/run_mem.json", tmpdir);
    snprintf(png, sizeof png, "%s/memory.png", tmpdir);
    snprintf(cmd, sizeof cmd, "%s run scenarios/gb200_ep32.yaml --json > %s", bin(), json);
    assert_int_equal(sh(cmd, NULL), 0);
    plot("memory", json, png);
    assert_image(png, 0);
    snprintf(png, sizeof png, "%s/memory.svg", tmpdir);
    plot("memory", json, png);
    assert_image(png, 1);
    /* input without a timeline: a clear message, exit 1 */
    char *o;
    snprintf(cmd, sizeof cmd, "%s plot memory tests/data/sweep/validate_points.tsv -o %s/bad.png", bin(), tmpdir);
    assert_int_equal(sh(cmd, &o), 1);
    mb_free(o);
}

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/mbsim-test-plot-XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return sh(cmd, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_gnuplot),
        cmocka_unit_test(test_validate_plot),
        cmocka_unit_test(test_sweep_plot),
        cmocka_unit_test(test_breakdown_plot),
        cmocka_unit_test(test_gantt_plot),
        cmocka_unit_test(test_memory_plot),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
