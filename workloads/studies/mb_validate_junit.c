/*
 * mb_validate_junit.c -- the rows of a validation as a JUnit XML report
 * (`mbsim validate --junit FILE --max-error PCT`, docs/ci.md), for the test
 * report views of CI systems (GitHub Actions, GitLab, Jenkins).
 *
 * The format is the one those tools read: one <testsuite> in <testsuites>,
 * with the counts tests / failures / errors / skipped, and one <testcase> per
 * row, holding <failure>, <error> or <skipped> where the row did not pass.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mb_validate.h"

/* s as XML attribute or text content: the five markup characters escaped, the
 * control characters XML 1.0 forbids (all below 0x20 but tab, LF, CR) as '?'. */
static void mb_val__xml(FILE *fp, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '&')
            fputs("&amp;", fp);
        else if (c == '<')
            fputs("&lt;", fp);
        else if (c == '>')
            fputs("&gt;", fp);
        else if (c == '"')
            fputs("&quot;", fp);
        else if (c == '\'')
            fputs("&apos;", fp);
        else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            fputc('?', fp);
        else
            fputc((int)c, fp);
    }
}

enum mb_val_junit_kind mb_validate_junit_kind(const struct mb_val_row *r, double max_err_pct, double *err_pct)
{
    *err_pct = 0;
    if (r->skipped)
        return !strncmp(r->reason, "simulation ", 11) ? MB_JUNIT_ERROR : MB_JUNIT_SKIPPED;
    if (r->mem_only) {
        if (!r->mem_compared)
            return MB_JUNIT_PASS;
        *err_pct = r->mem_err_pct;
    } else {
        *err_pct = r->err_pct;
    }
    return fabs(*err_pct) > max_err_pct ? MB_JUNIT_FAILURE : MB_JUNIT_PASS;
}

void mb_validate_junit_count(const struct mb_val_summary *s, double max_err_pct, size_t count[4])
{
    double e;
    count[0] = count[1] = count[2] = count[3] = 0;
    for (size_t i = 0; i < s->n_rows; i++)
        count[mb_validate_junit_kind(&s->rows[i], max_err_pct, &e)]++;
}

/* One <testcase>: name = the row's id, classname = mbsim.validate.SYSTEM. */
static void mb_val__junit_case(FILE *fp, const struct mb_val_row *r, double max_err_pct)
{
    double e;
    enum mb_val_junit_kind k = mb_validate_junit_kind(r, max_err_pct, &e);
    fputs("    <testcase classname=\"mbsim.validate.", fp);
    mb_val__xml(fp, r->system[0] ? r->system : "unknown");
    fputs("\" name=\"", fp);
    mb_val__xml(fp, r->id);
    fputs("\" file=\"", fp);
    mb_val__xml(fp, r->source);
    fprintf(fp, "\" line=\"%d\"", r->line);
    if (k == MB_JUNIT_PASS) {
        fputs("/>\n", fp);
        return;
    }
    fputs(">\n", fp);
    if (k == MB_JUNIT_SKIPPED || k == MB_JUNIT_ERROR) {
        fprintf(fp, "      <%s message=\"", k == MB_JUNIT_ERROR ? "error" : "skipped");
        mb_val__xml(fp, r->reason);
        fputs("\"/>\n", fp);
    } else {
        const char *what = r->mem_only ? "peak memory" : r->metric;
        double meas = r->mem_only ? r->meas_mem_gib : r->measured, pred = r->mem_only ? r->pred_mem_gib : r->predicted;
        fprintf(fp, "      <failure type=\"error\" message=\"%s error %+.2f%% is past %.4g%%\">", what, e,
                max_err_pct);
        fprintf(fp, "%s measured %.6g, predicted %.6g, error %+.2f%% (limit %.4g%%)</failure>\n", what, meas, pred, e,
                max_err_pct);
    }
    fputs("    </testcase>\n", fp);
}

int mb_validate_print_junit(const struct mb_val_summary *s, double max_err_pct, FILE *fp)
{
    size_t n[4];
    mb_validate_junit_count(s, max_err_pct, n);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", fp);
    fprintf(fp, "<testsuites name=\"mbsim validate\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
            s->n_rows, n[MB_JUNIT_FAILURE], n[MB_JUNIT_ERROR], n[MB_JUNIT_SKIPPED]);
    fprintf(fp, "  <testsuite name=\"mbsim validate\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
            s->n_rows, n[MB_JUNIT_FAILURE], n[MB_JUNIT_ERROR], n[MB_JUNIT_SKIPPED]);
    fprintf(fp, "    <properties>\n      <property name=\"max_error_pct\" value=\"%.6g\"/>\n", max_err_pct);
    if (s->n_predicted)
        fprintf(fp, "      <property name=\"mape_pct\" value=\"%.6g\"/>\n", s->mape_pct);
    fputs("    </properties>\n", fp);
    for (size_t i = 0; i < s->n_rows; i++)
        mb_val__junit_case(fp, &s->rows[i], max_err_pct);
    fputs("  </testsuite>\n</testsuites>\n", fp);
    return ferror(fp) ? -1 : 0;
}
