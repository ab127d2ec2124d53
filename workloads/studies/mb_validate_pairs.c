/*
 * mb_validate_pairs.c -- A/B pairs of a validated summary: found from the CSV's knob columns or read
 * from a file, their measured and predicted effects, and the statistics (mb_validate_pairs.h).
 */
#include "mb_validate_pairs.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mb_input.h"
#include "validate_int.h"

_Static_assert(MB_VAL_AB_NKNOB == 10 + MB_VAL_RC_COUNT, "knobs: precision, 9 layout columns, the recipe columns");

/* The layout knobs (required columns), in the order of mb_validate_ab_knob_name. */
static const int mb_pairs__layout_col[10] = {C_PRECISION, C_MBS, C_TP, C_PP, C_CP, C_VP, C_EP, C_ETP, C_FSDP, C_RECOMPUTE};

const char *mb_validate_ab_knob_name(int k)
{
    if (k < 0 || k >= MB_VAL_AB_NKNOB)
        return "?";
    return k < 10 ? mb_val__colname[mb_pairs__layout_col[k]] : mb_val__rcolname[k - 10];
}

/* 64-bit FNV-1a (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/) of a cell as compared:
 * trimmed, ASCII lower case, an absent cell (mb_validate__is_absent) as "", an integer as its value. */
static unsigned long long mb_pairs__hash(unsigned long long h, const char *cell)
{
    char buf[32];
    const char *t = cell;
    while (isspace((unsigned char)*t))
        t++;
    size_t n = strlen(t);
    while (n && isspace((unsigned char)t[n - 1]))
        n--;
    char *end;
    errno = 0;
    long long v = n ? strtoll(t, &end, 10) : 0;
    if (n && end == t + n && !errno) { /* "04" and "4" are one TP */
        snprintf(buf, sizeof buf, "%lld", v);
        t = buf;
        n = strlen(buf);
    }
    char tmp[8];
    size_t m = n < sizeof tmp ? n : sizeof tmp - 1;
    memcpy(tmp, t, m);
    tmp[m] = 0;
    if (n < sizeof tmp && mb_validate__is_absent(tmp))
        n = 0;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)tolower((unsigned char)t[i]);
        h *= 1099511628211ULL;
    }
    h ^= 0x1f; /* cell separator: ("ab","c") and ("a","bc") differ */
    return h * 1099511628211ULL;
}

#define MB_PAIRS__FNV0 14695981039346656037ULL

/* The recompute knob's text as the row runs it (the recompute_detail knob folds into it): recompute_detail
 * when the row states it (it refines the column: "" and "selective: mla_up_proj" beside "selective:mla_up_proj" are one setting), else the
 * column read as mb_validate_recompute reads it ("none [v0.6.0 ...]" is none); the cell itself if it
 * cannot be read (the row is skipped then anyway). */
static const char *mb_pairs__recompute(struct mb_val__csv *c, char *buf, size_t n)
{
    int d = c->ridx[MB_VAL_RC_RECOMPUTE_DETAIL];
    if (d >= 0 && !mb_validate__is_absent(c->f[d].text)) {
        size_t w = 0;
        for (const char *p = c->f[d].text; *p && w + 1 < n; p++)
            if (!isspace((unsigned char)*p))
                buf[w++] = *p;
        buf[w] = 0;
        return buf;
    }
    const char *cell = mb_validate__cell(c, C_RECOMPUTE);
    enum mb_rc_gran gran;
    unsigned mods;
    char why[8];
    if (mb_validate__is_absent(cell) || mb_validate_recompute(cell, &gran, &mods, why, sizeof why) != 0)
        return cell;
    snprintf(buf, n, "%d:%x", (int)gran, mods);
    return buf;
}

void mb_validate__csv_ab_key(struct mb_val__csv *c, struct mb_val_row *r)
{
    static const int same[] = {C_MODEL, C_GPUS, C_GBS, C_SEQ};
    unsigned long long h = mb_pairs__hash(MB_PAIRS__FNV0, r->system); /* the system as mbsim maps it */
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        h = mb_pairs__hash(h, mb_validate__cell(c, same[i]));
    r->ab_same = mb_pairs__hash(h, r->metric);
    for (int k = 0; k < MB_VAL_AB_NKNOB; k++) {
        const char *cell = "";
        char buf[128];
        if (k < 10 && mb_pairs__layout_col[k] == C_RECOMPUTE)
            cell = mb_pairs__recompute(c, buf, sizeof buf);
        else if (k < 10)
            cell = mb_validate__cell(c, mb_pairs__layout_col[k]);
        else if (k - 10 == MB_VAL_RC_RECOMPUTE_DETAIL)
            cell = ""; /* compared in the recompute knob */
        else if (c->ridx[k - 10] >= 0)
            cell = c->f[c->ridx[k - 10]].text;
        r->ab_knob[k] = mb_pairs__hash(MB_PAIRS__FNV0, cell);
    }
    r->ab_keyed = 1;
}

/* ---- one pair ---- */

static int mb_pairs__comparable(const struct mb_val_row *r)
{
    return !r->skipped && !r->mem_only && r->metric[0] && r->measured > 0 && r->predicted > 0;
}

/* Throughput of a row's value: a step time is inverted. */
static double mb_pairs__thr(const struct mb_val_row *r, double v)
{
    return !strcmp(r->metric, MB_VAL_STEP) ? 1.0 / v : v;
}

/* The effects of (a, b); 0, or 1 when either row has no prediction or the metrics differ. */
static int mb_pairs__eval(const struct mb_val_summary *s, size_t a, size_t b, const char *label, struct mb_val_pair *p)
{
    const struct mb_val_row *ra = &s->rows[a], *rb = &s->rows[b];
    if (!mb_pairs__comparable(ra) || !mb_pairs__comparable(rb) || strcmp(ra->metric, rb->metric))
        return 1;
    memset(p, 0, sizeof *p);
    p->a = a;
    p->b = b;
    mb_validate__copy_str(p->knobs, sizeof p->knobs, label);
    p->meas_effect = mb_pairs__thr(rb, rb->measured) / mb_pairs__thr(ra, ra->measured) - 1.0;
    p->pred_effect = mb_pairs__thr(rb, rb->predicted) / mb_pairs__thr(ra, ra->predicted) - 1.0;
    p->err_pts = (p->pred_effect - p->meas_effect) * 100.0;
    p->judged = fabs(p->meas_effect) > MB_PAIR_SIGN_MIN;
    p->sign_right = p->judged && (p->pred_effect > 0) == (p->meas_effect > 0) && p->pred_effect != 0;
    return 0;
}

/* The knob columns in which two keyed rows differ, "" if none. */
static void mb_pairs__diff(const struct mb_val_row *a, const struct mb_val_row *b, char *out, size_t n)
{
    out[0] = 0;
    for (int k = 0; k < MB_VAL_AB_NKNOB; k++)
        if (a->ab_knob[k] != b->ab_knob[k]) {
            size_t l = strlen(out);
            snprintf(out + l, n - l, "%s%s", l ? "," : "", mb_validate_ab_knob_name(k));
        }
}

static void mb_pairs__push(struct mb_val_pairs *out, size_t *cap, const struct mb_val_pair *p)
{
    if (out->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        out->p = mb_realloc(out->p, *cap * sizeof *out->p);
    }
    out->p[out->n++] = *p;
}

/* ---- statistics ---- */

static int mb_pairs__cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void mb_pairs__stats(const struct mb_val_pair *const *p, size_t n, const char *label, struct mb_val_pair_stats *st)
{
    memset(st, 0, sizeof *st);
    mb_validate__copy_str(st->knobs, sizeof st->knobs, label);
    st->n = n;
    st->median_abs_err_pts = st->mean_abs_err_pts = NAN;
    if (!n)
        return;
    double *e = mb_malloc(n * sizeof *e), sum = 0;
    for (size_t i = 0; i < n; i++) {
        e[i] = fabs(p[i]->err_pts);
        sum += e[i];
        st->n_judged += (size_t)p[i]->judged;
        st->n_sign_right += (size_t)p[i]->sign_right;
    }
    qsort(e, n, sizeof *e, mb_pairs__cmp_dbl);
    st->median_abs_err_pts = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    st->mean_abs_err_pts = sum / (double)n;
    mb_free(e);
}

static int mb_pairs__cmp_label(const void *x, const void *y)
{
    const struct mb_val_pair *a = *(const struct mb_val_pair *const *)x, *b = *(const struct mb_val_pair *const *)y;
    int c = strcmp(a->knobs, b->knobs);
    return c ? c : (a->a > b->a) - (a->a < b->a);
}

static int mb_pairs__cmp_group(const void *x, const void *y)
{
    const struct mb_val_pair_stats *a = x, *b = y;
    if (a->n != b->n)
        return a->n < b->n ? 1 : -1;
    return strcmp(a->knobs, b->knobs);
}

static int mb_pairs__cmp_err(const void *x, const void *y)
{
    const struct mb_val_pair *a = x, *b = y;
    double ea = fabs(a->err_pts), eb = fabs(b->err_pts);
    if (ea != eb)
        return ea < eb ? 1 : -1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* The statistics over all pairs and per label, then the pairs worst first. */
static void mb_pairs__finish(struct mb_val_pairs *out)
{
    const struct mb_val_pair **v = mb_malloc((out->n ? out->n : 1) * sizeof *v);
    for (size_t i = 0; i < out->n; i++)
        v[i] = &out->p[i];
    mb_pairs__stats(v, out->n, "", &out->all);
    qsort(v, out->n, sizeof *v, mb_pairs__cmp_label);
    out->by_knob = mb_calloc(out->n ? out->n : 1, sizeof *out->by_knob);
    for (size_t i = 0, j; i < out->n; i = j) {
        for (j = i + 1; j < out->n && !strcmp(v[j]->knobs, v[i]->knobs); j++)
            ;
        mb_pairs__stats(v + i, j - i, v[i]->knobs, &out->by_knob[out->n_by_knob++]);
    }
    qsort(out->by_knob, out->n_by_knob, sizeof *out->by_knob, mb_pairs__cmp_group);
    mb_free(v);
    if (out->n) /* p is NULL when no pair was found (qsort's argument must not be) */
        qsort(out->p, out->n, sizeof *out->p, mb_pairs__cmp_err);
}

/* ---- found pairs ---- */

static const struct mb_val_summary *mb_pairs__sort_rows;

static int mb_pairs__cmp_same(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    unsigned long long ha = mb_pairs__sort_rows->rows[a].ab_same, hb = mb_pairs__sort_rows->rows[b].ab_same;
    if (ha != hb)
        return ha < hb ? -1 : 1;
    return (a > b) - (a < b);
}

/* Pairs kept out of the totals: their statistics alone, under `label`; g is freed. */
static void mb_pairs__set_apart(struct mb_val_pairs *g, const char *label, struct mb_val_pair_stats *st)
{
    mb_pairs__finish(g);
    *st = g->all;
    mb_validate__copy_str(st->knobs, sizeof st->knobs, label);
    mb_validate_pairs_free(g);
}

void mb_validate_pairs_find(const struct mb_val_summary *s, struct mb_val_pairs *out)
{
    size_t cap = 0, n = 0, cap_unn = 0, cap_mis = 0;
    struct mb_val_pairs unn = {0}, mis = {0};
    memset(out, 0, sizeof *out);
    size_t *ix = mb_malloc((s->n_rows ? s->n_rows : 1) * sizeof *ix);
    for (size_t i = 0; i < s->n_rows; i++)
        if (s->rows[i].ab_keyed)
            ix[n++] = i;
    mb_pairs__sort_rows = s; /* qsort has no context argument; this runs on one thread */
    qsort(ix, n, sizeof *ix, mb_pairs__cmp_same);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && s->rows[ix[j]].ab_same == s->rows[ix[i]].ab_same; j++)
            ;
        for (size_t x = i; x < j; x++)
            for (size_t y = x + 1; y < j; y++) {
                char knobs[200];
                struct mb_val_pair p;
                mb_pairs__diff(&s->rows[ix[x]], &s->rows[ix[y]], knobs, sizeof knobs);
                if (!knobs[0])
                    continue; /* repeated measurements of one configuration: not an A/B pair */
                int unnamed = !strcmp(knobs, mb_val__rcolname[MB_VAL_RC_OTHER]);
                int mismatch = s->rows[ix[x]].layout_mismatch || s->rows[ix[y]].layout_mismatch;
                if (mb_pairs__eval(s, ix[x], ix[y], knobs, &p))
                    out->n_unpredicted += !unnamed;
                else if (unnamed) /* free text alone: a release or settings no column names */
                    mb_pairs__push(&unn, &cap_unn, &p);
                else if (mismatch) /* which layout ran is in doubt */
                    mb_pairs__push(&mis, &cap_mis, &p);
                else
                    mb_pairs__push(out, &cap, &p);
            }
    }
    mb_free(ix);
    mb_pairs__finish(out);
    mb_pairs__set_apart(&unn, mb_val__rcolname[MB_VAL_RC_OTHER], &out->unnamed);
    mb_pairs__set_apart(&mis, "(a LAYOUT-MISMATCH row)", &out->mismatch);
}

/* ---- explicit pairs ---- */

/* The one row with this id: its index, or -1 (err) for none or several. */
static long mb_pairs__row_of(const struct mb_val_summary *s, const char *id, const char *path, int line, int col,
                             struct mb_err *err)
{
    long found = -1;
    size_t count = 0;
    for (size_t i = 0; i < s->n_rows; i++)
        if (!strcmp(s->rows[i].id, id)) {
            if (!count++)
                found = (long)i;
        }
    if (count == 1)
        return found;
    if (!count)
        mb_err_set(err, path, line, col, "id '%.80s' names no row of the validated input", id);
    else
        mb_err_set(err, path, line, col, "id '%.80s' names %zu rows of the validated input; a pair needs one", id,
                   count);
    return -1;
}

/* One line "A,B[,LABEL]" (p: its text, NUL-terminated); 0, or -1 (err). */
static int mb_pairs__line(const struct mb_val_summary *s, char *p, const char *path, int line, struct mb_val_pairs *out,
                          size_t *cap, struct mb_err *err)
{
    char *f[3] = {NULL, NULL, NULL};
    int col[3] = {1, 1, 1}, nf = 0;
    char *start = p;
    for (char *q = p;; q++)
        if (*q == ',' || !*q) {
            int last = !*q;
            if (nf == 3)
                return mb_err_set(err, path, line, (int)(p - start) + 1, "expected 'A_ID,B_ID[,LABEL]': a fourth field");
            *q = 0;
            col[nf] = (int)(p - start) + 1;
            f[nf++] = mb_validate__trim(p);
            p = q + 1;
            if (last)
                break;
        }
    if (nf < 2 || !*f[0] || !*f[1])
        return mb_err_set(err, path, line, col[nf < 2 ? 0 : (*f[0] ? 1 : 0)], "expected 'A_ID,B_ID[,LABEL]'");
    long a = mb_pairs__row_of(s, f[0], path, line, col[0], err), b;
    if (a < 0 || (b = mb_pairs__row_of(s, f[1], path, line, col[1], err)) < 0)
        return -1;
    if (a == b)
        return mb_err_set(err, path, line, col[1], "a pair of a row with itself ('%.80s')", f[0]);
    char label[200] = "";
    if (f[2] && *f[2])
        mb_validate__copy_str(label, sizeof label, f[2]);
    else if (s->rows[a].ab_keyed && s->rows[b].ab_keyed)
        mb_pairs__diff(&s->rows[a], &s->rows[b], label, sizeof label);
    if (!label[0])
        mb_validate__copy_str(label, sizeof label, "explicit");
    struct mb_val_pair pr;
    if (mb_pairs__eval(s, (size_t)a, (size_t)b, label, &pr))
        out->n_unpredicted++;
    else
        mb_pairs__push(out, cap, &pr);
    return 0;
}

/* The text of pairs file path, LF line ends only, in *buf (mb_free it) and *len. */
static int mb_pairs__slurp(const char *path, char **buf, size_t *len, struct mb_err *err)
{
    if (mb_input_read(path, "a pairs file", 0, buf, len, err))
        return -1;
    *len = mb_input_unify_line_ends(*buf, *len);
    return 0;
}

static int mb_pairs__none(const char *path, int lines, struct mb_err *err)
{
    return mb_err_set(err, path, lines > 0 ? lines : 1, 1, "no pairs: expected lines 'A_ID,B_ID[,LABEL]'");
}

int mb_validate_pairs_check(const char *path, struct mb_err *err)
{
    char *buf;
    size_t len;
    if (mb_pairs__slurp(path, &buf, &len, err))
        return -1;
    int lines = 0, any = 0;
    for (char *p = buf; !any && p < buf + len; lines++) {
        char *e = p + strcspn(p, "\n");
        *e = 0;
        char *t = mb_validate__trim(p);
        any = *t && *t != '#';
        p = e + 1;
    }
    mb_free(buf);
    return any ? 0 : mb_pairs__none(path, lines, err);
}

int mb_validate_pairs_read(const struct mb_val_summary *s, const char *path, struct mb_val_pairs *out,
                           struct mb_err *err)
{
    char *buf;
    size_t len, cap = 0;
    memset(out, 0, sizeof *out);
    if (mb_pairs__slurp(path, &buf, &len, err))
        return -1;
    int rc = 0, line = 1;
    for (char *p = buf; rc == 0 && p < buf + len; line++) {
        char *e = p + strcspn(p, "\n");
        *e = 0;
        char *t = mb_validate__trim(p);
        if (*t && *t != '#')
            rc = mb_pairs__line(s, p, path, line, out, &cap, err);
        p = e + 1;
    }
    mb_free(buf);
    if (rc == 0 && !out->n && !out->n_unpredicted)
        rc = mb_pairs__none(path, line - 1, err);
    if (rc == 0)
        mb_pairs__finish(out);
    return rc;
}

void mb_validate_pairs_free(struct mb_val_pairs *p)
{
    mb_free(p->p);
    mb_free(p->by_knob);
    memset(p, 0, sizeof *p);
}

/* ---- printing ---- */

static double mb_pairs__pct(size_t k, size_t n)
{
    return n ? 100.0 * (double)k / (double)n : NAN;
}

static void mb_pairs__print_stats(const struct mb_val_pair_stats *st, FILE *fp)
{
    char pct[16] = "     -";
    if (st->n_judged)
        snprintf(pct, sizeof pct, "%5.1f %%", mb_pairs__pct(st->n_sign_right, st->n_judged));
    char med[16] = "     -", mean[16] = "     -"; /* no pair: no statistics, not "nan" */
    if (st->n) {
        snprintf(med, sizeof med, "%6.1f", st->median_abs_err_pts);
        snprintf(mean, sizeof mean, "%6.1f", st->mean_abs_err_pts);
    }
    fprintf(fp, "  %5zu  %5zu/%-5zu %-7s  %6s  %6s  %s\n", st->n, st->n_sign_right, st->n_judged, pct, med, mean,
            st->knobs[0] ? st->knobs : "(all pairs)");
}

void mb_validate_pairs_print_text(const struct mb_val_summary *s, const struct mb_val_pairs *p, FILE *fp)
{
    fprintf(fp, "\nA/B pairs: %zu compared", p->n);
    if (p->n_unpredicted)
        fprintf(fp, " (%zu more left out: a row not predicted, or measured on another metric)", p->n_unpredicted);
    fprintf(fp, "\n  effect = throughput of B / throughput of A - 1; error = predicted - measured effect, points;\n"
                "  sign judged where |measured effect| > %.0f %%\n\n",
            MB_PAIR_SIGN_MIN * 100);
    fprintf(fp, "  %5s  %-19s  %6s  %6s  %s\n", "pairs", "sign right", "median", "mean", "knobs that differ");
    mb_pairs__print_stats(&p->all, fp);
    for (size_t i = 0; i < p->n_by_knob; i++)
        mb_pairs__print_stats(&p->by_knob[i], fp);
    if (p->unnamed.n) {
        fprintf(fp, "  not in the totals: pairs that differ in the free-text other_recipe column alone (a release,\n"
                    "  or settings no column names):\n");
        mb_pairs__print_stats(&p->unnamed, fp);
    }
    if (p->mismatch.n) {
        fprintf(fp, "  not in the totals: pairs with a LAYOUT-MISMATCH row (the recipe's layout is not the published\n"
                    "  one, so which layout ran is in doubt):\n");
        mb_pairs__print_stats(&p->mismatch, fp);
    }
    if (!p->n)
        return;
    fprintf(fp, "\n  %-32s %-32s %-24s %9s %9s %7s  %s\n", "A (baseline)", "B (variant)", "knobs", "measured", "predicted",
            "error", "sign");
    for (size_t i = 0; i < p->n; i++) {
        const struct mb_val_pair *x = &p->p[i];
        fprintf(fp, "  %-32.32s %-32.32s %-24.24s %+8.1f%% %+8.1f%% %+7.1f  %s\n", s->rows[x->a].id, s->rows[x->b].id,
                x->knobs, x->meas_effect * 100, x->pred_effect * 100, x->err_pts,
                !x->judged ? "-" : x->sign_right ? "right" : "WRONG");
    }
}

static json_t *mb_pairs__jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *mb_pairs__jstats(const struct mb_val_pair_stats *st)
{
    json_t *o = json_object();
    if (st->knobs[0])
        json_object_set_new(o, "knobs", json_string(st->knobs));
    json_object_set_new(o, "n_pairs", json_integer((json_int_t)st->n));
    json_object_set_new(o, "n_judged", json_integer((json_int_t)st->n_judged));
    json_object_set_new(o, "n_sign_right", json_integer((json_int_t)st->n_sign_right));
    json_object_set_new(o, "sign_right_pct", mb_pairs__jnum(mb_pairs__pct(st->n_sign_right, st->n_judged)));
    json_object_set_new(o, "median_abs_err_pts", mb_pairs__jnum(st->median_abs_err_pts));
    json_object_set_new(o, "mean_abs_err_pts", mb_pairs__jnum(st->mean_abs_err_pts));
    return o;
}

int mb_validate_pairs_print_json(const struct mb_val_summary *s, const struct mb_val_pairs *p, FILE *fp)
{
    json_t *root = mb_pairs__jstats(&p->all), *by = json_array(), *pairs = json_array();
    json_object_set_new(root, "n_unpredicted", json_integer((json_int_t)p->n_unpredicted));
    json_object_set_new(root, "sign_min_pct", json_real(MB_PAIR_SIGN_MIN * 100));
    for (size_t i = 0; i < p->n_by_knob; i++)
        json_array_append_new(by, mb_pairs__jstats(&p->by_knob[i]));
    json_object_set_new(root, "by_knob", by);
    json_object_set_new(root, "other_recipe_only", mb_pairs__jstats(&p->unnamed));
    json_object_set_new(root, "layout_mismatch", mb_pairs__jstats(&p->mismatch));
    for (size_t i = 0; i < p->n; i++) {
        const struct mb_val_pair *x = &p->p[i];
        json_t *o = json_object();
        json_object_set_new(o, "a", json_string(s->rows[x->a].id));
        json_object_set_new(o, "b", json_string(s->rows[x->b].id));
        json_object_set_new(o, "knobs", json_string(x->knobs));
        json_object_set_new(o, "metric", json_string(s->rows[x->a].metric));
        json_object_set_new(o, "measured_effect_pct", mb_pairs__jnum(x->meas_effect * 100));
        json_object_set_new(o, "predicted_effect_pct", mb_pairs__jnum(x->pred_effect * 100));
        json_object_set_new(o, "error_pts", mb_pairs__jnum(x->err_pts));
        json_object_set_new(o, "sign_right", x->judged ? json_boolean(x->sign_right) : json_null());
        json_array_append_new(pairs, o);
    }
    json_object_set_new(root, "pairs", pairs);
    int rc = json_dumpf(root, fp, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) ? -1 : 0;
    fputc('\n', fp);
    json_decref(root);
    return rc;
}
