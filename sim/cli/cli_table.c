/*
 * cli_table.c -- how every `mbsim calibrate` kind writes its table (cli.h,
 * mb_cli_write_table): made in memory, written to the output's temporary file
 * (mb_outfile.h), loaded back from there as a calibration table, and renamed
 * over the output only when it loads. A table that would not load (the base
 * table's text copied with a column-0 comment inside its `framework:` block, a
 * quoted "framework": key, a relative `base:` that does not resolve from the
 * output's folder) is an error, exit 1, and nothing is written.
 *
 * Standard output and devices have no file to load from: the check loads a
 * temporary copy in the current folder (where `> table.yaml` puts it; /tmp
 * when the current folder is read-only) and prints the table only when it loads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mb_calib.h"
#include "mb_outfile.h"

/* Load the table at path (a temporary file standing for `out`); 0, or -1
 * after printing why, with the temporary name replaced by out's. */
static int mb_cli__table_loads(const char *who, const char *path, const char *out)
{
    struct mb_calib *c = NULL;
    struct mb_err err;
    mb_err_clear(&err);
    if (!mb_calib_load(NULL, path, &c, &err)) {
        mb_calib_free(c);
        return 0;
    }
    if (!strcmp(err.file, path))
        snprintf(err.file, sizeof err.file, "%s", out);
    char msg[MB_ERR_TEXT_LEN];
    mb_err_format(&err, msg, sizeof msg);
    fprintf(stderr, "%s: the table made does not load as a calibration table, so %s was not written: %s\n", who,
            out, msg);
    return -1;
}

/* The check of a table bound for stdout or a device: a temporary copy, loaded; 0 or -1 (printed). */
static int mb_cli__check_copy(const char *who, const char *text, size_t len, const char *out)
{
    static const char *const dirs[] = {".", NULL};
    const char *tmpdir = getenv("TMPDIR");
    struct mb_outfile v;
    struct mb_err err;
    mb_err_clear(&err);
    int opened = 0;
    for (int i = 0; i < 2 && !opened; i++) {
        const char *d = i == 0 ? dirs[0] : tmpdir && *tmpdir ? tmpdir : "/tmp";
        char *p = mb_path_join(d, "mbsim-table-check.yaml");
        opened = !mb_outfile_open(&v, p, NULL, &err) && v.tmp;
        if (!opened && !err.count)
            mb_outfile_abort(&v);
        mb_err_clear(&err);
        mb_free(p);
    }
    if (!opened) {
        fprintf(stderr, "%s: cannot check the table before writing it to %s: no writable folder for a temporary "
                        "copy (the current one, TMPDIR, /tmp)\n", who, out);
        return -1;
    }
    int rc = fwrite(text, 1, len, v.fp) != len || fflush(v.fp) ? -1 : 0;
    if (rc)
        fprintf(stderr, "%s: cannot check the table before writing it to %s: write error\n", who, out);
    else
        rc = mb_cli__table_loads(who, v.tmp, out);
    mb_outfile_abort(&v); /* the copy is removed, nothing was replaced */
    return rc;
}

int mb_cli_write_table(const char *who, const char *out, const char *base,
                       int (*make)(FILE *fp, void *ctx, struct mb_err *err), void *ctx)
{
    char *text = NULL;
    size_t len = 0;
    struct mb_err err;
    mb_err_clear(&err);
    FILE *mem = open_memstream(&text, &len);
    int rc = mem ? make(mem, ctx, &err) : mb_err_set(&err, NULL, 0, 0, "out of memory");
    if (mem && fclose(mem) && !rc)
        rc = mb_err_set(&err, NULL, 0, 0, "out of memory");
    if (rc) {
        if (err.count) {
            char msg[MB_ERR_TEXT_LEN];
            mb_err_format(&err, msg, sizeof msg);
            fprintf(stderr, "%s: %s\n", who, msg);
        }
        free(text);
        return 1;
    }
    struct mb_outfile o;
    const char *name = out ? out : "standard output";
    if (mb_outfile_open(&o, out ? out : "-", base, &err)) {
        mb_cli_print_err(&err);
        free(text);
        return 1;
    }
    if (o.tmp) {
        /* loaded from the very file that is renamed; a failed write is reported by the commit */
        if (fwrite(text, 1, len, o.fp) == len && !fflush(o.fp))
            rc = mb_cli__table_loads(who, o.tmp, name);
    } else if (!(rc = mb_cli__check_copy(who, text, len, name))) {
        fwrite(text, 1, len, o.fp); /* checked by the commit */
    }
    free(text);
    if (rc) {
        mb_outfile_abort(&o);
        return 1;
    }
    if (mb_outfile_commit(&o, &err)) {
        mb_cli_print_err(&err);
        return 1;
    }
    return 0;
}
