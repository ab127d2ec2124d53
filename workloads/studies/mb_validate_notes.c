/*
 * mb_validate_notes.c -- the free-text notes column: what a row's notes say of its recipe, an OOM and a peak.
 */
#include "validate_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Append ", what" (or "what" first) to buf of size n. */
void mb_validate__note_add(char *buf, size_t n, const char *what)
{
    size_t l = strlen(buf);
    if (l < n)
        snprintf(buf + l, n - l, "%s%s", l ? ", " : "", what);
}

/* A note item that says "off": a word off, no, without, disabled or false
 * ("offload" is not "off"). */
static int mb_validate__note_negated(const char *t)
{
    static const char *const neg[] = {"off", "no", "without", "disabled", "false", NULL};
    for (const char *p = t; *p;) {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz");
        for (int i = 0; n && neg[i]; i++)
            if (strlen(neg[i]) == n && !strncmp(p, neg[i], n))
                return 1;
        p += n ? n : 1;
    }
    return 0;
}

/* CUDA-graph module names in notes; the first name of a flag is how it is reported. */
static const struct {
    const char *name;
    unsigned flag;
} graph_names[] = {{"attn", MB_CG_ATTN},           {"attention", MB_CG_ATTN},
                   {"mlp", MB_CG_MLP},             {"moe", MB_CG_MOE},
                   {"moe_router", MB_CG_MOE_ROUTER}, {"moe_preprocess", MB_CG_MOE_PREPROCESS},
                   {"mamba", MB_CG_MAMBA}};

/* The module list after "CUDA graph(s)" in a note ("attn+moe_router+moe_preprocess",
 * "for attention and Mamba"), as MB_CG_* flags; 0 when the list is absent, holds a
 * name this does not know, or names a module the model lacks (never guessed). */
static unsigned mb_validate__note_graph_modules(const char *p, const struct mb_model *m)
{
    unsigned cg = 0;
    if (*p == 's')
        p++;
    p += strspn(p, " :");
    if (!strncmp(p, "for ", 4))
        p += 4;
    while (*p) {
        size_t n = strcspn(p, "+ ");
        if (n == 3 && !strncmp(p, "and", 3)) {
            p += n + strspn(p + n, "+ ");
            continue;
        }
        unsigned f = 0;
        for (size_t i = 0; i < sizeof graph_names / sizeof graph_names[0]; i++)
            if (strlen(graph_names[i].name) == n && !strncmp(p, graph_names[i].name, n))
                f = graph_names[i].flag;
        if (!f)
            return 0;
        cg |= f;
        p += n + strspn(p + n, "+ ");
    }
    int moe = m->num_experts > 0, mamba = m->mamba_heads > 0;
    if (((cg & (MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS | MB_CG_MOE)) && !moe) || ((cg & MB_CG_MAMBA) && !mamba) ||
        ((cg & MB_CG_MOE_PREPROCESS) && !(cg & MB_CG_MOE_ROUTER)))
        return 0;
    return cg;
}

/* The word before position `at` of `text`, lower case, in w (size n); "" at the start. */
static void mb_validate__word_before(const char *text, const char *at, char *w, size_t n)
{
    const char *e = at, *b;
    size_t k = 0;
    while (e > text && !isalnum((unsigned char)e[-1]))
        e--;
    b = e;
    while (b > text && isalpha((unsigned char)b[-1]))
        b--;
    for (; b < e && k + 1 < n; b++)
        w[k++] = (char)tolower((unsigned char)*b);
    w[k] = '\0';
}

int mb_validate_notes_oom(const char *notes)
{
    static const char *const neg[] = {"no", "not", "without", "avoid", "avoids", NULL};
    const char *p = notes ? notes : "";
    for (const char *q = p; *q; q++) {
        size_t len = 0;
        if (!strncasecmp(q, "oom", 3) && !isalpha((unsigned char)q[3]))
            len = 3;
        else if (!strncasecmp(q, "out of memory", 13))
            len = 13;
        if (!len || (q > p && isalnum((unsigned char)q[-1])))
            continue;
        char w[16];
        int negated = 0;
        mb_validate__word_before(p, q, w, sizeof w);
        for (int i = 0; neg[i]; i++)
            negated |= !strcmp(w, neg[i]);
        if (!negated)
            return 1;
        q += len - 1;
    }
    return 0;
}

int mb_validate_notes_peak_memory(const char *notes, double *gib)
{
    const char *p = notes ? notes : "";
    *gib = 0.0;
    while (*p) {
        size_t len = strcspn(p, ";");
        char item[128], *t, *end;
        size_t k = len < sizeof item ? len : 0; /* an item this long is not "peak N GB" */
        memcpy(item, p, k);
        item[k] = '\0';
        t = mb_validate__trim(item);
        if (!strncasecmp(t, "peak ", 5)) {
            t += 5;
            t += strspn(t, " ");
            errno = 0;
            double v = isdigit((unsigned char)*t) ? strtod(t, &end) : 0.0;
            if (v > 0 && isfinite(v) && errno == 0) {
                end += strspn(end, " ");
                size_t u = strcspn(end, " ,(");
                if (u == 3 && !strncasecmp(end, "GiB", 3)) {
                    *gib = v;
                    return 1;
                }
                if (u == 2 && !strncasecmp(end, "GB", 2)) {
                    *gib = v * 1e9 / 1073741824.0;
                    return 1;
                }
            }
        }
        p += len;
        if (*p)
            p++;
    }
    return 0;
}

int mb_validate_apply_notes(struct mb_scenario *s, const char *notes, char *applied, size_t n)
{
    int moe_ep = s->model.num_experts > 0 && s->ep > 1, count = 0;
    char what[128];
    if (applied && n)
        applied[0] = '\0';
    const char *p = notes ? notes : "";
    while (*p) {
        size_t len = strcspn(p, ";,");
        char item[96];
        size_t k = 0;
        for (size_t i = 0; i < len && k < sizeof item - 1; i++)
            item[k++] = (char)tolower((unsigned char)p[i]);
        item[k] = '\0';
        const char *t = item + strspn(item, " \"");
        int sms;
        what[0] = '\0';
        if (moe_ep && !strncmp(t, "hybridep", 8)) {
            s->dispatcher = MB_DISP_HYBRIDEP;
            int given = sscanf(t + 8, "%d sms", &sms) == 1;
            if (given && sms > 0 && sms <= 1024)
                s->dispatcher_sms = sms;
            snprintf(what, sizeof what, "dispatcher hybridep (%d SMs%s)", s->dispatcher_sms,
                     given && (sms <= 0 || sms > 1024) ? "; the note's SM count is out of range" : "");
        } else if (moe_ep && !strncmp(t, "deepep", 6)) {
            s->dispatcher = MB_DISP_DEEPEP;
            snprintf(what, sizeof what, "dispatcher deepep");
        } else if (strstr(t, "ep overlap") || strstr(t, "ep comm overlap")) {
            int on = !mb_validate__note_negated(t), ok = moe_ep && (s->pp == 1 || s->vpp > 1);
            if (!on || ok) {
                s->overlap_ep_comm = on;
                snprintf(what, sizeof what, "EP overlap %s", on ? "on" : "off");
            } else {
                snprintf(what, sizeof what, "EP overlap not applicable (%s)",
                         moe_ep ? "pp > 1 without vpp" : "no expert parallelism");
            }
        } else if (!strncmp(t, "full-iteration cuda graph", 25) || strstr(t, "full_cuda_graph")) {
            s->cuda_graph = MB_CG_FULL_ITERATION;
            snprintf(what, sizeof what, "full-iteration CUDA graph");
        } else if (strstr(t, "cuda graphs off")) {
            s->cuda_graph = 0;
            snprintf(what, sizeof what, "no CUDA graphs");
        } else if (strstr(t, "cuda graph") && !strstr(t, "a/b")) {
            unsigned cg = mb_validate__note_graph_modules(strstr(t, "cuda graph") + 10, &s->model);
            if (cg) {
                char list[80] = "";
                unsigned said = 0;
                for (size_t i = 0; i < sizeof graph_names / sizeof graph_names[0]; i++)
                    if ((cg & graph_names[i].flag) && !(said & graph_names[i].flag)) {
                        size_t l = strlen(list);
                        snprintf(list + l, sizeof list - l, "%s%s", l ? "+" : "", graph_names[i].name);
                        said |= graph_names[i].flag;
                    }
                s->cuda_graph = cg;
                snprintf(what, sizeof what, "CUDA graphs %s", list);
            }
        }
        if (what[0]) {
            count++;
            if (applied && n)
                mb_validate__note_add(applied, n, what);
        }
        p += len;
        if (*p)
            p++;
    }
    return count;
}

/* ------------------------------------------------------------------ */
