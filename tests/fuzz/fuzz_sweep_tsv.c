/* The sweep TSV reader behind `mbsim sweep --resume` and `mbsim merge`
 * (mb_sweep_read_tsv_opts, workloads/studies/mb_sweep_tsv.c): each input is a
 * TSV read back against the grid of tests/data/sweep/small.yaml (36
 * configurations, loaded once in LLVMFuzzerInitialize): the provenance line,
 * the header, every cell of every row, the consistency of an ok row's
 * throughput with its step time (mb_sweep_scenario per row) and, unless
 * MBSIM_FUZZ_PARSE_ONLY is set, the simulation of the first finished row
 * again (mb_sweep_eval). The input's length picks the mode: odd lengths may
 * end in a cut line (--resume), lengths 2 and 3 mod 4 must carry the
 * fixture's own provenance line (what resume and merge ask for).
 *
 * Oracle: rows read are written again (mb_sweep_write_tsv, after the
 * provenance line read) and read again; when that succeeds, writing them a
 * third time gives the second text byte for byte (numbers keep the 6 digits
 * they are written with, so a row resumed from a TSV is the row it was).
 * Seeds: tests/fuzz/seeds/sweep_tsv/ (the fixture's TSVs: whole, shards, cut,
 * concatenated shards, screened, without provenance). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_hwloc_pin.h"
#include "fuzz_util.h"
#include "mb_sweep.h"

#define FUZZ_FIXTURE MBSIM_SOURCE_DIR "/tests/data/sweep/small.yaml"

static struct mb_sweep fixture;
static struct mb_sweep_prov prov; /* the fixture's own: scenario, tables, default options */

struct rows {
    struct mb_sweep_row *r;
    size_t n, cap;
};

static int keep(const struct mb_sweep_row *row, int line, void *ctx, struct mb_err *err)
{
    struct rows *rs = ctx;
    (void)line;
    (void)err;
    if (row->index >= mb_sweep_size(&fixture) || row->status > MB_SWEEP_SCREENED)
        abort(); /* the reader let a row outside the grid through */
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? 2 * rs->cap : 64;
        rs->r = realloc(rs->r, rs->cap * sizeof *rs->r);
        if (!rs->r)
            abort();
    }
    rs->r[rs->n++] = *row;
    return 0;
}

/* rows (and the provenance line p, when it has options) as mb_sweep_write_tsv writes them. */
static char *write_rows(const struct rows *rs, const struct mb_sweep_prov *p, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        abort();
    if (p->options[0])
        mb_sweep_write_prov(p, f);
    mb_sweep_write_tsv(&fixture, rs->r, rs->n, 0, f);
    fclose(f);
    return buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct mb_err e;
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin();
    mb_err_clear(&e);
    if (mb_sweep_load(FUZZ_FIXTURE, &fixture, &e) || mb_sweep_size(&fixture) != 36 ||
        mb_sweep_provenance(&fixture, "mb-cap:16", &prov, &e))
        abort(); /* the fixture must load */
    fixture.mb_cap = 16;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_err e;
    struct mb_sweep_prov found;
    struct rows rs = {0};
    int partial = 0;
    struct mb_sweep_read_opts o = {.allow_partial = (int)(size & 1), .partial_p = &partial,
                                   .want = size & 2 ? &prov : NULL, .found = &found,
                                   .no_resimulation = fuzz_parse_only()};
    mb_err_clear(&e);
    const char *path = fuzz_tmp(data, size, "tsv");
    if (mb_sweep_read_tsv_opts(&fixture, path, &o, keep, &rs, &e) == 0) {
        if (e.count || (partial && !o.allow_partial))
            abort(); /* success with an error recorded, or a cut line taken */
        size_t n2, n3;
        char *t2 = write_rows(&rs, &found, &n2);
        struct rows again = {0};
        struct mb_sweep_read_opts o2 = {.want = o.want, .found = &found, .no_resimulation = 1};
        mb_err_clear(&e);
        if (mb_sweep_read_tsv_opts(&fixture, fuzz_tmp((const uint8_t *)t2, n2, "tsv2"), &o2, keep, &again, &e) == 0) {
            char *t3 = write_rows(&again, &found, &n3);
            if (n2 != n3 || memcmp(t2, t3, n2))
                abort(); /* a row written, read and written again changed */
            free(t3);
        }
        free(again.r);
        free(t2);
    } else if (!e.count || !e.msg[0]) {
        abort(); /* a refusal without a message */
    }
    free(rs.r);
    return 0;
}
