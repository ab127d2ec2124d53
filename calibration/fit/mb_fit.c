/*
 * mb_fit.c -- fitting the framework-time model to measured runs, and its
 * leave-one-family-out cross-validation (mb_fit.h has the objective and the
 * method).
 *
 * Parameters are moved in prior units z_j = (theta_j - default_j) / sigma_j,
 * so the prior term is |z|^2 and the bounds are a box in z. One iteration
 * solves the damped, linearized problem
 *     min |r + J d|^2 + w |z + d|^2 + lambda |d|^2,   lo <= z + d <= hi
 * with w = MB_FIT_SIGMA_OBS^2 (the objective of mb_fit.h divided by 1 / sigma_obs^2)
 * over the free parameters (those at a bound whose step points outward are
 * held there), evaluates the rows at z + d, accepts when the objective falls
 * (lambda / 10) or retries with lambda x 10, and updates J by Broyden's rule
 * either way. The Jacobian starts as forward differences at the defaults
 * (step 0.1 sigma, inward at an upper bound), computed once per row and kept
 * in the row, so cross-validation folds share it; only the fitted parameters'
 * columns are simulated, and none of a parameter the row never reads
 * (mb_fit_inert_params: its difference is 0 to the bit). Rows of one run
 * (the same layout published twice, mb_fit_row.same) are simulated once per
 * batch and the prediction shared: each job's prediction depends on its
 * scenario, table and parameters alone.
 */
#include "mb_fit.h"
#include "mb_step.h"

#include <ctype.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MB_FIT__H 0.1        /* finite-difference step, prior units */
#define MB_FIT__TOL 0.01     /* stop when no parameter moves more than this (prior units) */

static double mb_fit__now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ rows */

void mb_fit_set_init(struct mb_fit_set *set)
{
    memset(set, 0, sizeof *set);
    mb_validate_init(&set->sum);
}

void mb_fit_family(const char *model, char *out, size_t n)
{
    size_t k = 0;
    if (!strncasecmp(model, "gpt_oss", 7) || !strncasecmp(model, "gpt-oss", 7)) {
        snprintf(out, n, "gpt-oss");
        return;
    }
    for (; model[k] && isalpha((unsigned char)model[k]) && k + 1 < n; k++)
        out[k] = (char)tolower((unsigned char)model[k]);
    out[k] = '\0';
}

static void mb_fit__on_row(void *ctx, const struct mb_val_row *r, const struct mb_scenario *s)
{
    struct mb_fit_set *set = ctx;
    if (s->calib_path[0])
        return;
    if (set->n == set->cap) {
        set->cap = set->cap ? 2 * set->cap : 64;
        set->rows = mb_realloc(set->rows, set->cap * sizeof *set->rows);
    }
    struct mb_fit_row *w = &set->rows[set->n++];
    memset(w, 0, sizeof *w);
    w->s = *s;
    if (s->model.n_layers > 0) {
        w->s.model.layer = mb_malloc((size_t)s->model.n_layers * sizeof *s->model.layer);
        memcpy(w->s.model.layer, s->model.layer, (size_t)s->model.n_layers * sizeof *s->model.layer);
    }
    snprintf(w->id, sizeof w->id, "%s", r->id);
    snprintf(w->model, sizeof w->model, "%s", r->model);
    mb_fit_family(r->model, w->family, sizeof w->family);
    snprintf(w->gpu, sizeof w->gpu, "%s", s->system.gpu);
    snprintf(w->metric, sizeof w->metric, "%s", r->metric);
    w->measured = r->measured;
    w->zero_shot = r->predicted;
    w->inert = mb_fit_inert_params(&w->s);
}

unsigned mb_fit_inert_params(const struct mb_scenario *s)
{
    unsigned inert = 0;
    int moe = 0;
    for (int i = 0; i < s->model.n_layers && !moe; i++)
        moe = s->model.layer[i].ffn == MB_FFN_MOE;
    if (!moe)
        inert |= MB_FIT_PARAM(MB_FW_KERNEL_MOE);
    if (!s->cuda_graph)
        inert |= MB_FIT_PARAM(MB_FW_KERNEL_GRAPH);
    return inert;
}

int mb_fit_add_csv(struct mb_fit_set *set, const char *path, struct mb_err *err)
{
    set->sum.on_row = mb_fit__on_row;
    set->sum.on_row_ctx = set;
    return mb_validate_add_csv(&set->sum, path, err);
}

/* Row w's scenario with what does not change its simulation cleared (its id, file, measured values
 * and warnings) and the layer pointer out, in *out; the layers are compared apart. */
static void mb_fit__sim_part(const struct mb_fit_row *w, struct mb_scenario *out)
{
    memcpy(out, &w->s, sizeof *out);
    memset(out->name, 0, sizeof out->name);
    memset(out->file, 0, sizeof out->file);
    memset(out->warnings, 0, sizeof out->warnings);
    memset(out->meas_source, 0, sizeof out->meas_source);
    memset(out->meas_csv_row, 0, sizeof out->meas_csv_row);
    out->meas_tokens_per_s_per_gpu = out->meas_model_tflops_per_gpu = out->meas_step_time_s = 0;
    out->meas_peak_memory_gib = 0;
    out->meas_oom = out->meas_peak_iteration = out->meas_csv_row_line = out->meas_csv_row_col = 0;
    out->model.layer = NULL;
}

/* Rows a and b simulate the same run: the scenarios equal byte for byte but for what mb_fit__sim_part
 * clears (padding or text left after a string's end may make equal runs unequal: then they are
 * simulated apart, as before), the layers equal, the same metric, GPU and zero-shot prediction. */
static int mb_fit__same_run(const struct mb_fit_row *a, const struct mb_scenario *pa, const struct mb_fit_row *b,
                            const struct mb_scenario *pb)
{
    return !strcmp(a->metric, b->metric) && !strcmp(a->gpu, b->gpu) &&
           !memcmp(&a->zero_shot, &b->zero_shot, sizeof a->zero_shot) && !memcmp(pa, pb, sizeof *pa) &&
           a->s.model.n_layers == b->s.model.n_layers &&
           (a->s.model.n_layers <= 0 ||
            !memcmp(a->s.model.layer, b->s.model.layer, (size_t)a->s.model.n_layers * sizeof *a->s.model.layer));
}

void mb_fit_set_finish(struct mb_fit_set *set)
{
    mb_validate_finish(&set->sum);
    struct mb_scenario *pa = mb_malloc(sizeof *pa), *pb = mb_malloc(sizeof *pb);
    unsigned long long *h = mb_malloc((set->n + 1) * sizeof *h);
    for (size_t i = 0; i < set->n; i++) {
        mb_fit__sim_part(&set->rows[i], pa);
        h[i] = mb_hash64(pa, sizeof *pa, MB_HASH64_INIT);
        set->rows[i].same = i;
        for (size_t j = 0; j < i; j++) {
            if (h[j] != h[i] || set->rows[j].same != j)
                continue;
            mb_fit__sim_part(&set->rows[j], pb);
            if (mb_fit__same_run(&set->rows[i], pa, &set->rows[j], pb)) {
                set->rows[i].same = j;
                set->rows[i].shares = set->rows[j].shares = 1;
                break;
            }
        }
    }
    mb_free(h);
    mb_free(pa);
    mb_free(pb);
}

void mb_fit_set_free(struct mb_fit_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++)
        mb_scenario_free(&set->rows[i].s);
    mb_free(set->rows);
    mb_validate_free(&set->sum);
    memset(set, 0, sizeof *set);
}

/* ------------------------------------------------------------ evaluation */

/* One simulation: row `row` with table `base` and parameters fw. */
struct mb_fit__job {
    const struct mb_fit_row *row;
    const struct mb_calib *base;
    struct mb_calib_framework fw;
    int own;                 /* 1: use fw; 0: base's own parameters */
    double pred;             /* out: predicted metric, NAN on failure */
    const char *sib_path;    /* mb_fit_set.sibling_table */
    int col;                 /* mb_fit__linearize: the parameter stepped, -1 for the defaults */
    double cost_s;           /* out: wall seconds of the simulation */
};

/* The table row w is priced with: a view of base, or for a sibling GPU's row that GPU's own table
 * (sib_path, else shipped) with base's framework section, NULL if it does not load. */
static struct mb_calib *mb_fit__table(const struct mb_fit_row *w, const struct mb_calib *base, const char *sib_path)
{
    if (!strcasecmp(w->gpu, mb_calib_spec(base)->name))
        return mb_calib_view(base);
    struct mb_calib *v;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_calib_shared(w->gpu, sib_path, &v, &e))
        return NULL;
    struct mb_calib_framework fw;
    mb_calib_framework_get(base, &fw);
    mb_calib_framework_set(v, &fw);
    return v;
}

static double mb_fit__run(struct mb_fit__job *j)
{
    struct mb_calib *v = mb_fit__table(j->row, j->base, j->sib_path);
    if (!v)
        return NAN;
    if (j->own)
        mb_calib_framework_set(v, &j->fw);
    struct mb_step_opts o = {.critical_path = 0, .cal = v}; /* validate's options */
    struct mb_result r;
    struct mb_err e;
    mb_err_clear(&e);
    double pred = NAN;
    if (mb_step_simulate_opts(&j->row->s, &o, &r, &e) == 0) {
        pred = !strcmp(j->row->metric, MB_VAL_TOKENS) ? r.tokens_per_s_per_gpu
               : !strcmp(j->row->metric, MB_VAL_STEP) ? r.step_time_s
                                                      : r.model_tflops_per_gpu;
        j->cost_s = r.sim_wall_s;
        mb_result_free(&r);
    }
    mb_calib_free(v);
    return isfinite(pred) && pred > 0 ? pred : NAN;
}

struct mb_fit__pool {
    struct mb_fit__job *jobs;
    const size_t *order;     /* jobs in the order they are claimed (NULL: as listed) */
    size_t n, next;
    pthread_mutex_t mu;
};

static void *mb_fit__worker(void *arg)
{
    struct mb_fit__pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n)
            return NULL;
        struct mb_fit__job *j = &p->jobs[p->order ? p->order[i] : i];
        j->pred = mb_fit__run(j);
    }
}

/* A job's place in the claim order: its row's last simulation time, longest first (ties: as listed). */
struct mb_fit__rank {
    double cost;
    size_t i;
};

static int mb_fit__longer(const void *a, const void *b)
{
    const struct mb_fit__rank *x = a, *y = b;
    return x->cost > y->cost ? -1 : x->cost < y->cost ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* alias[k]: an earlier job of jobs[0..n) whose simulation job k repeats (a row of the same run,
 * mb_fit_row.same, the same table and parameters), else k. Returns the jobs left to simulate. */
static size_t mb_fit__dedupe(const struct mb_fit_set *set, const struct mb_fit__job *jobs, size_t n, size_t *alias)
{
    size_t run = 0;
    for (size_t k = 0; k < n; k++) {
        const struct mb_fit__job *a = &jobs[k];
        alias[k] = k;
        for (size_t l = 0; a->row->shares && l < k && alias[k] == k; l++) {
            const struct mb_fit__job *b = &jobs[l];
            if (alias[l] == l && b->row->same == a->row->same &&
                a->base == b->base && a->own == b->own && (!a->own || !memcmp(a->fw.v, b->fw.v, sizeof a->fw.v)))
                alias[k] = l;
        }
        run += alias[k] == k;
    }
    return run;
}

/* Run every job of the set's rows, on up to set->jobs threads (0: online CPUs); a job that repeats an
 * earlier one's simulation (mb_fit__dedupe) takes its prediction. Each job's prediction depends on the
 * job alone, so the order only changes the wall time: the rows whose last simulation took longest
 * start first (a batch does not wait for one long row started last), and each row's cost_s becomes
 * the time of its job (the longest of them). Returns the simulations run. */
static int mb_fit__run_all(const struct mb_fit_set *set, struct mb_fit__job *jobs, size_t n)
{
    int nthreads = set->jobs;
    if (nthreads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = c > 0 ? (int)c : 1;
    }
    size_t *alias = mb_malloc((n + 1) * sizeof *alias), nrun = mb_fit__dedupe(set, jobs, n, alias);
    struct mb_fit__rank *rk = mb_malloc((nrun + 1) * sizeof *rk);
    size_t *order = mb_malloc((nrun + 1) * sizeof *order), r = 0;
    for (size_t i = 0; i < n; i++)
        if (alias[i] == i)
            rk[r++] = (struct mb_fit__rank){jobs[i].row->cost_s, i};
    if (nthreads > 1) /* one thread: as listed */
        qsort(rk, nrun, sizeof *rk, mb_fit__longer);
    for (size_t i = 0; i < nrun; i++)
        order[i] = rk[i].i;
    mb_free(rk);
    if ((size_t)nthreads > nrun)
        nthreads = (int)nrun;
    struct mb_fit__pool p = {jobs, order, nrun, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t *th = mb_calloc((size_t)nthreads + 1, sizeof *th);
    int started = 0;
    for (int t = 0; nthreads > 1 && t < nthreads; t++)
        if (pthread_create(&th[t], NULL, mb_fit__worker, &p) == 0)
            started++;
        else
            break;
    if (!started)
        mb_fit__worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    mb_free(th);
    mb_free(order);
    for (size_t i = 0; i < n; i++) {
        jobs[i].pred = jobs[alias[i]].pred;
        jobs[i].cost_s = jobs[alias[i]].cost_s;
    }
    mb_free(alias);
    for (size_t i = 0; i < n; i++) /* the rows' costs for the next batch (a row may have several jobs) */
        ((struct mb_fit_row *)jobs[i].row)->cost_s = 0;
    for (size_t i = 0; i < n; i++) {
        struct mb_fit_row *w = (struct mb_fit_row *)jobs[i].row;
        w->cost_s = fmax(w->cost_s, jobs[i].cost_s);
    }
    return (int)nrun;
}

double mb_fit_predict(const struct mb_fit_set *set, size_t i, const struct mb_calib *base,
                      const struct mb_calib_framework *fw)
{
    struct mb_fit__job j;
    memset(&j, 0, sizeof j);
    j.row = &set->rows[i];
    j.base = base;
    j.sib_path = set->sibling_table;
    j.own = fw != NULL;
    if (fw)
        j.fw = *fw;
    return mb_fit__run(&j);
}

/* Signed residual of a prediction: ln(pred / meas). */
static double mb_fit__res(const struct mb_fit_row *w, double pred)
{
    return log(pred / w->measured);
}

/* ------------------------------------------------------------ parameters */

/* Where a fit starts and what it is pulled toward: the fitted parameters
 * (`params` bits) at their evidence defaults (membound_eff: the table's
 * membound.eff), the others at base's own values (a fitted table keeps what
 * the fit does not move). */
static void mb_fit__prior(const struct mb_calib *base, unsigned params, struct mb_calib_framework *fw)
{
    mb_calib_framework_get(base, fw);
    for (int p = 0; p < MB_FW_COUNT; p++)
        if (params & MB_FIT_PARAM(p))
            fw->v[p] = fw->def[p];
    fw->set = (1u << MB_FW_COUNT) - 1;
    fw->source = "";
}

/* Parameters at prior-unit point z of the fitted set. */
static void mb_fit__theta(const struct mb_calib_framework *prior, const int *pi, int np, const double *z,
                          struct mb_calib_framework *out)
{
    *out = *prior;
    for (int k = 0; k < np; k++) {
        const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)pi[k]);
        double v = prior->v[pi[k]] + z[k] * in->sigma;
        out->v[pi[k]] = v < in->lo ? in->lo : v > in->hi ? in->hi : v;
    }
}

/* Solve the n x n system A x = b (Gaussian elimination with partial pivoting, n <= MB_FW_COUNT). */
static int mb_fit__solve(int n, double A[MB_FW_COUNT][MB_FW_COUNT], double *b, double *x)
{
    double M[MB_FW_COUNT][MB_FW_COUNT + 1];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            M[i][j] = A[i][j];
        M[i][n] = b[i];
    }
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(M[r][c]) > fabs(M[piv][c]))
                piv = r;
        if (fabs(M[piv][c]) < 1e-300)
            return -1;
        for (int j = 0; j <= n; j++) {
            double t = M[c][j];
            M[c][j] = M[piv][j];
            M[piv][j] = t;
        }
        for (int r = 0; r < n; r++) {
            if (r == c)
                continue;
            double f = M[r][c] / M[c][c];
            for (int j = c; j <= n; j++)
                M[r][j] -= f * M[c][j];
        }
    }
    for (int i = 0; i < n; i++)
        x[i] = M[i][n] / M[i][i];
    return 0;
}

/* The damped, bounded step d from z (np parameters, m rows with residuals r and Jacobian J[m][np]). */
static void mb_fit__step(int np, size_t m, const double *r, const double (*J)[MB_FW_COUNT], const double *z,
                         const double *lo, const double *hi, double lambda, double w, double *d)
{
    int fixed[MB_FW_COUNT] = {0};
    for (int pass = 0; pass <= np; pass++) {
        int fi[MB_FW_COUNT], nf = 0;
        for (int k = 0; k < np; k++) {
            if (fixed[k])
                d[k] = (fixed[k] < 0 ? lo[k] : hi[k]) - z[k];
            else
                fi[nf++] = k;
        }
        double A[MB_FW_COUNT][MB_FW_COUNT] = {{0}}, g[MB_FW_COUNT] = {0}, x[MB_FW_COUNT] = {0};
        for (int a = 0; a < nf; a++) {
            for (int b = 0; b < nf; b++) {
                double s = 0;
                for (size_t i = 0; i < m; i++)
                    s += J[i][fi[a]] * J[i][fi[b]];
                A[a][b] = s + (a == b ? w + lambda : 0);
            }
            double s = 0;
            for (size_t i = 0; i < m; i++) {
                double ri = r[i];
                for (int k = 0; k < np; k++)
                    if (fixed[k])
                        ri += J[i][k] * d[k];
                s += J[i][fi[a]] * ri;
            }
            g[a] = -(s + w * z[fi[a]]);
        }
        if (nf > 0 && mb_fit__solve(nf, A, g, x))
            memset(x, 0, sizeof x);
        for (int a = 0; a < nf; a++)
            d[fi[a]] = x[a];
        /* the most violated bound becomes active; done when none is */
        int worst = -1;
        double wv = 1e-12;
        for (int a = 0; a < nf; a++) {
            int k = fi[a];
            double over = z[k] + d[k] > hi[k] ? z[k] + d[k] - hi[k] : z[k] + d[k] < lo[k] ? lo[k] - z[k] - d[k] : 0;
            if (over > wv) {
                wv = over;
                worst = k;
            }
        }
        if (worst < 0)
            return;
        fixed[worst] = z[worst] + d[worst] > hi[worst] ? 1 : -1;
    }
}

/* Huber's loss of a log residual: r^2 inside MB_FIT_HUBER, 2 delta |r| - delta^2
 * beyond, so a row the step cannot represent (a latency-bound GBS-4 run, a
 * mechanism mbsim lacks) pulls with a constant force instead of one that grows
 * with its error. */
static double mb_fit__huber(double r)
{
    double a = fabs(r), d = MB_FIT_HUBER;
    return a <= d ? r * r : 2 * d * a - d * d;
}

/* IRLS weight of a residual: the Gauss-Newton step on Huber's loss is the
 * least-squares step with rows scaled by sqrt(min(1, delta / |r|)). */
static double mb_fit__irls(double r)
{
    double a = fabs(r);
    return a <= MB_FIT_HUBER ? 1.0 : sqrt(MB_FIT_HUBER / a);
}

/* Objective sum huber(r) + w |z|^2. */
static double mb_fit__obj(size_t m, const double *r, int np, const double *z, double w)
{
    double f = 0;
    for (size_t i = 0; i < m; i++)
        f += mb_fit__huber(r[i]);
    for (int k = 0; k < np; k++)
        f += w * z[k] * z[k];
    return f;
}

/* Rows of idx without residual at the defaults get it, and every row the columns of its Jacobian
 * there that `want` (MB_FIT_PARAM bits) asks for and it lacks (one batch of simulations: the
 * defaults and one step of each such parameter per row). A column of a parameter the row never
 * reads (mb_fit_row.inert) is 0 without a simulation: its step would predict the defaults' value
 * to the bit. Columns added later step from the parameters the row's defaults run used. */
static void mb_fit__linearize(struct mb_fit_set *set, const size_t *idx, size_t n, const struct mb_calib *base,
                              const struct mb_calib_framework *prior, unsigned want, int *sims)
{
    size_t nj = 0;
    struct mb_fit__job *jobs = mb_calloc(n * (MB_FW_COUNT + 1) + 1, sizeof *jobs);
    for (size_t a = 0; a < n; a++) {
        struct mb_fit_row *w = &set->rows[idx[a]];
        if (w->lin_ok < 0)
            continue;
        if (!w->lin_ok)
            memcpy(w->lin_v, prior->v, sizeof w->lin_v);
        unsigned inert = want & w->inert & ~w->lin_have;
        for (int p = 0; p < MB_FW_COUNT; p++)
            if (inert & MB_FIT_PARAM(p))
                w->J0[p] = 0;
        w->lin_have |= inert;
        for (int p = w->lin_ok ? 0 : -1; p < MB_FW_COUNT; p++) {
            if (p >= 0 && !(want & ~w->lin_have & MB_FIT_PARAM(p)))
                continue;
            struct mb_fit__job *j = &jobs[nj++];
            j->row = w;
            j->base = base;
            j->sib_path = set->sibling_table;
            j->own = 1;
            j->col = p;
            j->fw = *prior;
            memcpy(j->fw.v, w->lin_v, sizeof j->fw.v);
            if (p >= 0) {
                const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)p);
                double h = MB_FIT__H * in->sigma;
                j->fw.v[p] += w->lin_v[p] + h > in->hi ? -h : h;
            }
        }
    }
    *sims += mb_fit__run_all(set, jobs, nj);
    for (size_t k = 0; k < nj; k++) { /* a row's defaults job comes before its columns */
        struct mb_fit_row *w = (struct mb_fit_row *)jobs[k].row;
        int p = jobs[k].col;
        if (p < 0) {
            w->lin_ok = isfinite(jobs[k].pred) ? 1 : -1;
            if (w->lin_ok > 0)
                w->r0 = mb_fit__res(w, jobs[k].pred);
            continue;
        }
        if (w->lin_ok < 0)
            continue;
        double pp = jobs[k].pred;
        double dz = (jobs[k].fw.v[p] - w->lin_v[p]) / mb_calib_fw_info((enum mb_fw_param)p)->sigma;
        w->J0[p] = isfinite(pp) ? (mb_fit__res(w, pp) - w->r0) / dz : 0;
        w->lin_have |= MB_FIT_PARAM(p);
    }
    mb_free(jobs);
}

/* Residuals of rows idx[0..m) at parameters th into r (the row's default residual on failure). */
static void mb_fit__eval(struct mb_fit_set *set, const size_t *idx, size_t m, const struct mb_calib *base,
                         const struct mb_calib_framework *th, double *r, int *sims)
{
    struct mb_fit__job *jobs = mb_calloc(m + 1, sizeof *jobs);
    for (size_t a = 0; a < m; a++)
        jobs[a] = (struct mb_fit__job){&set->rows[idx[a]], base, *th, 1, NAN, set->sibling_table, 0, 0};
    *sims += mb_fit__run_all(set, jobs, m);
    for (size_t a = 0; a < m; a++)
        r[a] = isfinite(jobs[a].pred) ? mb_fit__res(&set->rows[idx[a]], jobs[a].pred) : set->rows[idx[a]].r0;
    mb_free(jobs);
}

/* Forward-difference Jacobian J[m][np] of rows idx at prior-unit point z (residuals r there):
 * one batch of simulations per parameter, stepping away from a bound it sits on. A row that
 * never reads the parameter (mb_fit_row.inert) would predict what it predicts at z: its
 * difference is 0 without a simulation. */
static void mb_fit__jacobian(struct mb_fit_set *set, const size_t *idx, size_t m, const struct mb_calib *base,
                             const struct mb_calib_framework *prior, const int *pi, int np, const double *z,
                             const double *hi, const double *r, double (*J)[MB_FW_COUNT], int *sims)
{
    double *rk = mb_malloc(m * sizeof *rk), *rs = mb_malloc(m * sizeof *rs);
    size_t *sub = mb_malloc(m * sizeof *sub), *at = mb_malloc(m * sizeof *at);
    for (int k = 0; k < np; k++) {
        double zk[MB_FW_COUNT], h = z[k] + MB_FIT__H > hi[k] ? -MB_FIT__H : MB_FIT__H;
        memcpy(zk, z, sizeof zk);
        zk[k] += h;
        struct mb_calib_framework th;
        mb_fit__theta(prior, pi, np, zk, &th);
        size_t ns = 0;
        for (size_t i = 0; i < m; i++) {
            rk[i] = r[i];
            if (!(set->rows[idx[i]].inert & MB_FIT_PARAM(pi[k]))) {
                at[ns] = i;
                sub[ns++] = idx[i];
            }
        }
        if (ns) {
            mb_fit__eval(set, sub, ns, base, &th, rs, sims);
            for (size_t a = 0; a < ns; a++)
                rk[at[a]] = rs[a];
        }
        for (size_t i = 0; i < m; i++)
            J[i][k] = (rk[i] - r[i]) / h;
    }
    mb_free(rk);
    mb_free(rs);
    mb_free(sub);
    mb_free(at);
}

double mb_fit_signed_median(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    double *v = mb_malloc(n * sizeof *v);
    memcpy(v, x, n * sizeof *v);
    for (size_t i = 1; i < n; i++) /* insertion sort: n is small */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    double m = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    mb_free(v);
    return m;
}

/* Error in % of a row's prediction (validate's convention: (pred - meas) / meas). */
static double mb_fit__err(const struct mb_fit_row *w, double pred)
{
    return (pred - w->measured) / w->measured * 100;
}

/* Linearized leave-one-out at the fit (prior-unit point z, residuals r, Jacobian J of rows idx[0..m)):
 * without row i the gradient of the objective is -c_i J_i^T r_i, so one Newton step moves z by
 * (H - c_i J_i^T J_i)^-1 c_i J_i^T r_i, H = sum_k c_k J_k^T J_k + w I (c: Huber's IRLS weights). */
static void mb_fit__loo(const size_t *idx, size_t m, const double *r, const double (*J)[MB_FW_COUNT], const int *pi,
                        int np, const double *z, const double *lo, const double *hi, double w,
                        struct mb_fit_result *res)
{
    double H[MB_FW_COUNT][MB_FW_COUNT] = {{0}};
    for (int a = 0; a < np; a++)
        H[a][a] = w;
    for (size_t i = 0; i < m; i++)
        for (int a = 0; a < np; a++)
            for (int b = 0; b < np; b++)
                H[a][b] += mb_fit__irls(r[i]) * J[i][a] * J[i][b];
    for (int p = 0; p < MB_FW_COUNT; p++)
        res->loo_lo[p] = res->loo_hi[p] = res->fit.v[p];
    for (size_t i = 0; i < m; i++) {
        double c = mb_fit__irls(r[i]), Hi[MB_FW_COUNT][MB_FW_COUNT], g[MB_FW_COUNT], d[MB_FW_COUNT], zi[MB_FW_COUNT];
        for (int a = 0; a < np; a++) {
            g[a] = c * J[i][a] * r[i];
            for (int b = 0; b < np; b++)
                Hi[a][b] = H[a][b] - c * J[i][a] * J[i][b];
        }
        if (mb_fit__solve(np, Hi, g, d))
            continue;
        for (int k = 0; k < np; k++)
            zi[k] = fmin(hi[k], fmax(lo[k], z[k] + d[k]));
        struct mb_calib_framework th;
        mb_fit__theta(&res->prior, pi, np, zi, &th);
        for (int k = 0; k < np; k++) {
            int p = pi[k];
            double v = th.v[p], shift = v - res->fit.v[p];
            res->loo_lo[p] = fmin(res->loo_lo[p], v);
            res->loo_hi[p] = fmax(res->loo_hi[p], v);
            for (int q = 0; q < MB_FIT_PINS; q++) /* keep the MB_FIT_PINS largest |shift| */
                if (fabs(shift) > fabs(res->pin_shift[p][q])) {
                    memmove(&res->pin_shift[p][q + 1], &res->pin_shift[p][q], (MB_FIT_PINS - 1 - q) * sizeof(double));
                    memmove(&res->pin_row[p][q + 1], &res->pin_row[p][q], (MB_FIT_PINS - 1 - q) * sizeof(size_t));
                    res->pin_shift[p][q] = shift;
                    res->pin_row[p][q] = idx[i];
                    break;
                }
        }
    }
}

int mb_fit_framework(struct mb_fit_set *set, const size_t *idx_in, size_t n_in, const struct mb_calib *base,
                     const struct mb_fit_opts *o, struct mb_fit_result *res, struct mb_err *err)
{
    double t0 = mb_fit__now();
    memset(res, 0, sizeof *res);
    unsigned params = o && o->params ? o->params : MB_FIT_DEFAULT_PARAMS;
    mb_fit__prior(base, params, &res->prior);
    res->fit = res->prior;
    const char *gpu = mb_calib_spec(base)->name;
    for (size_t a = 0; a < n_in; a++)
        if (!mb_calib_siblings(set->rows[idx_in[a]].gpu, gpu))
            return mb_err_set(err, NULL, 0, 0, "row '%s' runs on %s, the table is for %s (not a sibling GPU)",
                              set->rows[idx_in[a]].id, set->rows[idx_in[a]].gpu, gpu);
    if (n_in == 0)
        return 0;
    int max_iter = o && o->max_iter > 0 ? o->max_iter : 8;
    double w = (o && o->prior_weight > 0 ? o->prior_weight : 1.0) * MB_FIT_SIGMA_OBS * MB_FIT_SIGMA_OBS;
    int pi[MB_FW_COUNT], np = 0;
    double lo[MB_FW_COUNT], hi[MB_FW_COUNT], z[MB_FW_COUNT] = {0};
    for (int p = 0; p < MB_FW_COUNT; p++)
        if (params & MB_FIT_PARAM(p)) {
            const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)p);
            pi[np] = p;
            lo[np] = (in->lo - res->prior.v[p]) / in->sigma;
            hi[np] = (in->hi - res->prior.v[p]) / in->sigma;
            np++;
        }
    mb_fit__linearize(set, idx_in, n_in, base, &res->prior, params, &res->sims);
    size_t m = 0, *idx = mb_malloc(n_in * sizeof *idx);
    for (size_t a = 0; a < n_in; a++)
        if (set->rows[idx_in[a]].lin_ok > 0)
            idx[m++] = idx_in[a];
    if (m == 0) {
        mb_free(idx);
        return mb_err_set(err, NULL, 0, 0, "no row of %s simulates", gpu);
    }
    res->n_rows = m;
    double *r = mb_malloc(m * sizeof *r), *rn = mb_malloc(m * sizeof *rn), *rs = mb_malloc(m * sizeof *rs);
    double (*J)[MB_FW_COUNT] = mb_malloc(m * sizeof *J), (*Js)[MB_FW_COUNT] = mb_malloc(m * sizeof *Js);
    for (size_t i = 0; i < m; i++) {
        r[i] = set->rows[idx[i]].r0;
        for (int k = 0; k < np; k++)
            J[i][k] = set->rows[idx[i]].J0[pi[k]];
    }
    double f = mb_fit__obj(m, r, np, z, w), lambda = 1e-2;
    int refreshed = 0;
    res->obj_prior = f;
    for (int it = 0; it < max_iter; it++) {
        double d[MB_FW_COUNT] = {0}, zn[MB_FW_COUNT];
        int accepted = 0;
        double moved = 0;
        for (size_t i = 0; i < m; i++) { /* Huber's loss as reweighted least squares */
            double c = mb_fit__irls(r[i]);
            rs[i] = c * r[i];
            for (int k = 0; k < np; k++)
                Js[i][k] = c * J[i][k];
        }
        for (int tries = 0; tries < 4 && !accepted; tries++) {
            mb_fit__step(np, m, rs, (const double(*)[MB_FW_COUNT])Js, z, lo, hi, lambda, w, d);
            moved = 0;
            for (int k = 0; k < np; k++) {
                zn[k] = z[k] + d[k];
                moved = fmax(moved, fabs(d[k]));
            }
            if (moved < MB_FIT__TOL)
                break;
            struct mb_calib_framework th;
            mb_fit__theta(&res->prior, pi, np, zn, &th);
            mb_fit__eval(set, idx, m, base, &th, rn, &res->sims);
            /* Broyden: J += (rn - r - J d) d^T / d^T d */
            double dd = 0;
            for (int k = 0; k < np; k++)
                dd += d[k] * d[k];
            for (size_t i = 0; i < m; i++) {
                double y = rn[i] - r[i];
                for (int k = 0; k < np; k++)
                    y -= J[i][k] * d[k];
                for (int k = 0; k < np; k++)
                    J[i][k] += y * d[k] / dd;
            }
            double fn = mb_fit__obj(m, rn, np, zn, w);
            if (fn < f) {
                accepted = 1;
                double drop = f - fn;
                f = fn;
                memcpy(z, zn, sizeof z);
                memcpy(r, rn, m * sizeof *r);
                lambda = fmax(lambda / 10, 1e-6);
                res->iterations++;
                if (drop < 1e-4 * f)
                    moved = 0; /* converged */
            } else {
                lambda *= 10;
            }
        }
        if (!accepted || moved < MB_FIT__TOL) {
            /* stalled: the Broyden updates may have drifted from the true
             * slopes; re-measure them where the fit stands and go on (not twice in a row) */
            if (refreshed || res->iterations == 0)
                break;
            refreshed = 1;
            mb_fit__jacobian(set, idx, m, base, &res->prior, pi, np, z, hi, r, J, &res->sims);
            lambda = 1e-2;
            continue;
        }
        refreshed = 0;
    }
    mb_fit__theta(&res->prior, pi, np, z, &res->fit);
    res->obj_fit = f;
    mb_fit__loo(idx, m, r, (const double(*)[MB_FW_COUNT])J, pi, np, z, lo, hi, w, res);
    /* signed medians and MAPEs in validate's convention (step-time rows flip sign) */
    double *e0 = mb_malloc(m * sizeof *e0), *e1 = mb_malloc(m * sizeof *e1), s0 = 0, s1 = 0;
    for (size_t i = 0; i < m; i++) {
        const struct mb_fit_row *row = &set->rows[idx[i]];
        e0[i] = mb_fit__err(row, row->measured * exp(row->r0));
        e1[i] = mb_fit__err(row, row->measured * exp(r[i]));
        s0 += fabs(e0[i]);
        s1 += fabs(e1[i]);
    }
    res->mape_prior = s0 / m;
    res->mape_fit = s1 / m;
    res->median_prior = mb_fit_signed_median(e0, m);
    res->median_fit = mb_fit_signed_median(e1, m);
    mb_free(e0);
    mb_free(e1);
    mb_free(r);
    mb_free(rn);
    mb_free(rs);
    mb_free(J);
    mb_free(Js);
    mb_free(idx);
    res->wall_s = mb_fit__now() - t0;
    return 0;
}

/* ------------------------------------------------------------ cross-validation */

static int mb_fit__strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct values of field (gpu or family) of the rows, sorted. */
static size_t mb_fit__distinct(const struct mb_fit_set *set, size_t off, const char ***out)
{
    const char **v = mb_malloc((set->n + 1) * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < set->n; i++) {
        const char *x = (const char *)&set->rows[i] + off;
        size_t j = 0;
        while (j < k && strcmp(v[j], x))
            j++;
        if (j == k)
            v[k++] = x;
    }
    qsort(v, k, sizeof *v, mb_fit__strcmp);
    *out = v;
    return k;
}

static void mb_fit__group(struct mb_fit_cv_group *g, const char *name, const struct mb_fit_set *set,
                          const double *err_zero, const double *err_cv, size_t off)
{
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    double *z = mb_malloc((set->n + 1) * sizeof *z), *c = mb_malloc((set->n + 1) * sizeof *c);
    for (size_t i = 0; i < set->n; i++) {
        const struct mb_fit_row *w = &set->rows[i];
        if (name[0] && strcmp((const char *)w + off, name))
            continue;
        z[g->n] = err_zero[i];
        c[g->n] = err_cv[i];
        g->mape_zero += fabs(z[g->n]);
        g->mape_cv += fabs(c[g->n]);
        g->n++;
    }
    if (g->n) {
        g->mape_zero /= g->n;
        g->mape_cv /= g->n;
    }
    g->median_zero = mb_fit_signed_median(z, g->n);
    g->median_cv = mb_fit_signed_median(c, g->n);
    mb_free(z);
    mb_free(c);
}

void mb_fit_transfer(const struct mb_calib_framework *fits, const unsigned *params, size_t n, unsigned want,
                     const struct mb_calib_framework *prior, struct mb_calib_framework *out)
{
    *out = *prior;
    double *x = mb_malloc((n + 1) * sizeof *x);
    for (int p = 0; p < MB_FW_COUNT; p++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (params[i] & want & MB_FIT_PARAM(p))
                x[k++] = fits[i].v[p];
        if (k)
            out->v[p] = mb_fit_signed_median(x, k);
    }
    mb_free(x);
}

/* One cross-validation fold: GPU g's rows of family f held out. */
struct mb_fit__fold {
    struct mb_calib_framework fw; /* the fit on g's other families (state 1) */
    int state;                    /* 0: no rows of f on g; 1: fitted; 2: no other family on g (transfer) */
};

/* Predict the rows of GPU gpu and family fam with base and fw into cv->err_cv; the number of rows. */
static size_t mb_fit__cv_predict(struct mb_fit_set *set, struct mb_fit_cv *cv, const char *gpu, const char *fam,
                               const struct mb_calib *base, const struct mb_calib_framework *fw)
{
    struct mb_fit__job *jobs = mb_calloc(set->n + 1, sizeof *jobs);
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++)
        if (mb_calib_siblings(set->rows[i].gpu, gpu) && !strcmp(set->rows[i].family, fam))
            jobs[n++] = (struct mb_fit__job){&set->rows[i], base, *fw, 1, NAN, set->sibling_table, 0, 0};
    cv->sims += mb_fit__run_all(set, jobs, n);
    for (size_t a = 0; a < n; a++) {
        const struct mb_fit_row *w = jobs[a].row;
        double p = isfinite(jobs[a].pred) ? jobs[a].pred : w->zero_shot;
        cv->err_cv[w - set->rows] = mb_fit__err(w, p);
    }
    mb_free(jobs);
    return n;
}

/* Cross-validate GPU gi (table base): the zero-shot errors, then every fold
 * with other families on the GPU fitted and predicted (state 1); a fold with
 * none is left for the transfer (state 2). *params: what the folds fit (0: the
 * GPU is predicted at the defaults, as shipped). */
static int mb_fit__cv_gpu(struct mb_fit_set *set, const struct mb_fit_opts *o, struct mb_fit_cv *cv, const char *gpu,
                          const char **fams, size_t nf, const struct mb_calib *base, unsigned *params,
                          struct mb_fit__fold *folds, struct mb_err *err)
{
    size_t *train = mb_malloc((set->n + 1) * sizeof *train);
    size_t nall = 0;
    for (size_t i = 0; i < set->n; i++)
        if (mb_calib_siblings(set->rows[i].gpu, gpu))
            train[nall++] = i;
    /* cross-validate as shipped: refit what the shipped table's fit moved
     * (fit.params); a GPU whose table keeps the defaults predicts its rows
     * at the defaults (o->fit_unfitted: fit every GPU with o's set) */
    struct mb_calib_framework shipped;
    mb_calib_framework_get(base, &shipped);
    struct mb_fit_opts fo = o ? *o : (struct mb_fit_opts){0};
    if (!(o && o->fit_unfitted))
        fo.params = shipped.fitted;
    else if (!fo.params)
        fo.params = MB_FIT_DEFAULT_PARAMS;
    *params = fo.params;
    struct mb_calib_framework prior;
    mb_fit__prior(base, fo.params, &prior);
    /* every row of the GPU at the defaults: the zero-shot figure, and the Jacobian the folds share */
    mb_fit__linearize(set, train, nall, base, &prior, fo.params, &cv->sims);
    for (size_t a = 0; a < nall; a++) {
        const struct mb_fit_row *w = &set->rows[train[a]];
        cv->err_zero[train[a]] = w->lin_ok > 0 ? mb_fit__err(w, w->measured * exp(w->r0)) : mb_fit__err(w, w->zero_shot);
    }
    if (!fo.params) {
        for (size_t a = 0; a < nall; a++)
            cv->err_cv[train[a]] = cv->err_zero[train[a]];
        cv->n_default += nall;
        cv->n_unfitted_gpus++;
        mb_free(train);
        return 0;
    }
    int rc = 0;
    for (size_t fi = 0; fi < nf && !rc; fi++) {
        size_t ntr = 0, nte = 0;
        for (size_t i = 0; i < set->n; i++) {
            const struct mb_fit_row *w = &set->rows[i];
            if (!mb_calib_siblings(w->gpu, gpu))
                continue;
            if (strcmp(w->family, fams[fi]))
                train[ntr++] = i;
            else
                nte++;
        }
        if (nte == 0)
            continue;
        if (ntr == 0) {
            folds[fi].state = 2;
            continue;
        }
        struct mb_fit_result fr;
        if (mb_fit_framework(set, train, ntr, base, &fo, &fr, err)) {
            rc = -1;
            break;
        }
        cv->sims += fr.sims;
        cv->n_fits++;
        folds[fi].fw = fr.fit;
        folds[fi].state = 1;
        mb_fit__cv_predict(set, cv, gpu, fams[fi], base, &fr.fit);
    }
    mb_free(train);
    return rc;
}

/* Fold (gi, fi) of state 2: the transfer of the other GPUs' fits of the same
 * fold (none fitted: the defaults). */
static void mb_fit__cv_transfer(struct mb_fit_set *set, struct mb_fit_cv *cv, const char **gpus, size_t ng,
                                const char *fam, size_t gi, size_t fi, size_t nf, struct mb_calib **bases,
                                const unsigned *params, const struct mb_fit__fold *folds)
{
    struct mb_calib_framework *fits = mb_calloc(ng, sizeof *fits), prior, fw;
    unsigned *fp = mb_calloc(ng, sizeof *fp);
    size_t k = 0;
    for (size_t gj = 0; gj < ng; gj++)
        if (gj != gi && folds[gj * nf + fi].state == 1) {
            fits[k] = folds[gj * nf + fi].fw;
            fp[k++] = params[gj];
        }
    mb_fit__prior(bases[gi], params[gi], &prior);
    mb_fit_transfer(fits, fp, k, params[gi], &prior, &fw);
    size_t n = mb_fit__cv_predict(set, cv, gpus[gi], fam, bases[gi], &fw);
    *(k ? &cv->n_transfer : &cv->n_default) += n;
    mb_free(fits);
    mb_free(fp);
}

int mb_fit_cv(struct mb_fit_set *set, const struct mb_fit_opts *o, struct mb_fit_cv *cv, struct mb_err *err)
{
    double t0 = mb_fit__now();
    memset(cv, 0, sizeof *cv);
    cv->n_rows = set->n;
    cv->err_cv = mb_calloc(set->n + 1, sizeof *cv->err_cv);
    cv->err_zero = mb_calloc(set->n + 1, sizeof *cv->err_zero);
    const char **gpus, **fams;
    size_t ng = mb_fit__distinct(set, offsetof(struct mb_fit_row, gpu), &gpus);
    size_t nf = mb_fit__distinct(set, offsetof(struct mb_fit_row, family), &fams);
    struct mb_calib **bases = mb_calloc(ng + 1, sizeof *bases);
    unsigned *params = mb_calloc(ng + 1, sizeof *params);
    struct mb_fit__fold *folds = mb_calloc(ng * nf + 1, sizeof *folds);
    int rc = 0;
    const char *sib = set->sibling_table;
    set->sibling_table = o ? o->table : NULL;
    for (size_t gi = 0; gi < ng && !rc; gi++) {
        rc = mb_calib_load(gpus[gi], o ? o->table : NULL, &bases[gi], err) ? -1 : 0;
        size_t gj = 0;
        while (gj < gi && !mb_calib_siblings(gpus[gj], gpus[gi]))
            gj++;
        if (!rc && gj == gi) /* the group's first GPU fits and predicts every sibling's rows */
            rc = mb_fit__cv_gpu(set, o, cv, gpus[gi], fams, nf, bases[gi], &params[gi], &folds[gi * nf], err);
    }
    for (size_t gi = 0; gi < ng && !rc; gi++)
        for (size_t fi = 0; fi < nf; fi++)
            if (folds[gi * nf + fi].state == 2)
                mb_fit__cv_transfer(set, cv, gpus, ng, fams[fi], gi, fi, nf, bases, params, folds);
    if (!rc) {
        mb_fit__group(&cv->all, "", set, cv->err_zero, cv->err_cv, offsetof(struct mb_fit_row, gpu));
        snprintf(cv->all.name, sizeof cv->all.name, "all");
        cv->by_gpu = mb_calloc(ng + 1, sizeof *cv->by_gpu);
        cv->by_family = mb_calloc(nf + 1, sizeof *cv->by_family);
        for (size_t gi = 0; gi < ng; gi++)
            mb_fit__group(&cv->by_gpu[gi], gpus[gi], set, cv->err_zero, cv->err_cv, offsetof(struct mb_fit_row, gpu));
        for (size_t fi = 0; fi < nf; fi++)
            mb_fit__group(&cv->by_family[fi], fams[fi], set, cv->err_zero, cv->err_cv, offsetof(struct mb_fit_row, family));
        cv->n_gpu = ng;
        cv->n_family = nf;
    }
    set->sibling_table = sib;
    for (size_t gi = 0; gi < ng; gi++)
        mb_calib_free(bases[gi]);
    mb_free(bases);
    mb_free(params);
    mb_free(folds);
    mb_free(gpus);
    mb_free(fams);
    cv->wall_s = mb_fit__now() - t0;
    return rc;
}

static void mb_fit__print_group(FILE *fp, const struct mb_fit_cv_group *g)
{
    fprintf(fp, "  %-12s %5zu %-4s   zero-shot %6.1f %% (median %+6.1f %%)   cross-validated %6.1f %% (median %+6.1f %%)\n",
            g->name, g->n, mb_plural((long long)g->n, "row", "rows"), g->mape_zero, g->median_zero, g->mape_cv,
            g->median_cv);
}

/* The rows furthest off when held out (MB_FIT_WORST of them, worst first):
 * where a user should look for a mechanism the step lacks. */
static void mb_fit__print_worst(const struct mb_fit_cv *cv, const struct mb_fit_set *set, FILE *fp)
{
    size_t n = set->n < MB_FIT_WORST ? set->n : MB_FIT_WORST;
    size_t *pick = mb_calloc(n + 1, sizeof *pick);
    for (size_t k = 0; k < n; k++) { /* selection: n is small */
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < set->n; i++) {
            int taken = 0;
            for (size_t q = 0; q < k && !taken; q++)
                taken = pick[q] == i;
            if (!taken && (best == SIZE_MAX || fabs(cv->err_cv[i]) > fabs(cv->err_cv[best])))
                best = i;
        }
        pick[k] = best;
    }
    fprintf(fp, "worst held-out rows (error %%: zero-shot, cross-validated):\n");
    for (size_t k = 0; k < n; k++) {
        const struct mb_fit_row *w = &set->rows[pick[k]];
        fprintf(fp, "  %-56s %-6s %-10s %+7.1f %+7.1f\n", w->id, w->gpu, w->family, cv->err_zero[pick[k]],
                cv->err_cv[pick[k]]);
    }
    mb_free(pick);
}

void mb_fit_cv_print(const struct mb_fit_cv *cv, const struct mb_fit_set *set, FILE *fp)
{
    fprintf(fp, "leave-one-family-out cross-validation of the framework-time model (%zu %s)\n", cv->n_rows,
            mb_plural((long long)cv->n_rows, "row", "rows"));
    fprintf(fp, "MAPE cross-validated: %.2f %% (signed median %+.1f %%)   zero-shot: %.2f %% (signed median %+.1f %%)\n",
            cv->all.mape_cv, cv->all.median_cv, cv->all.mape_zero, cv->all.median_zero);
    fprintf(fp, "by GPU:\n");
    for (size_t i = 0; i < cv->n_gpu; i++)
        mb_fit__print_group(fp, &cv->by_gpu[i]);
    fprintf(fp, "by held-out family:\n");
    for (size_t i = 0; i < cv->n_family; i++)
        mb_fit__print_group(fp, &cv->by_family[i]);
    mb_fit__print_worst(cv, set, fp);
    fprintf(fp, "%zu %s fitted (family x GPU), %zu %s predicted with the other GPUs' fits of the fold (no other "
                "family on their GPU), %zu with the defaults (no GPU to transfer from, or %zu %s whose shipped "
                "table keeps the defaults); %d %s in %.1f s\n",
            cv->n_fits, mb_plural((long long)cv->n_fits, "fold", "folds"), cv->n_transfer,
            mb_plural((long long)cv->n_transfer, "row", "rows"), cv->n_default,
            cv->n_unfitted_gpus,
            mb_plural((long long)cv->n_unfitted_gpus, "GPU", "GPUs"), cv->sims,
            mb_plural(cv->sims, "simulation", "simulations"), cv->wall_s);
}

void mb_fit_cv_free(struct mb_fit_cv *cv)
{
    if (!cv)
        return;
    mb_free(cv->err_cv);
    mb_free(cv->err_zero);
    mb_free(cv->by_gpu);
    mb_free(cv->by_family);
    memset(cv, 0, sizeof *cv);
}
