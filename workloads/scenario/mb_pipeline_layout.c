/*
 * mb_pipeline_layout.c -- Megatron's --pipeline-model-parallel-layout
 * notation ("Et*3|(tt|)*29m|L") expanded into one character per item
 * (mb_scenario.h: mb_pipeline_layout_expand). Used by the scenario key table
 * (parallel.pipeline_layout) and the loader.
 */
#include "mb_scenario.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mb_scn__lay {
    const char *in;
    size_t at;
    char *out;
    size_t n, len;
    char msg[200];
};

static int mb_scn__lay_put(struct mb_scn__lay *p, char c)
{
    if (p->n + 1 >= p->len) {
        snprintf(p->msg, sizeof p->msg, "expands to more than %zu items", p->len - 1);
        return -1;
    }
    p->out[p->n++] = c;
    p->out[p->n] = '\0';
    return 0;
}

static int mb_scn__lay_seq(struct mb_scn__lay *p, int depth);

/* "*N" after an item or group: the repeat count, 1 when absent. */
static int mb_scn__lay_count(struct mb_scn__lay *p, long *n)
{
    *n = 1;
    if (p->in[p->at] != '*')
        return 0;
    p->at++;
    char *end;
    long v = strtol(p->in + p->at, &end, 10);
    if (end == p->in + p->at || v < 0 || v > 100000) {
        snprintf(p->msg, sizeof p->msg, "expected a repeat count after '*'");
        return -1;
    }
    p->at = (size_t)(end - p->in);
    *n = v;
    return 0;
}

static int mb_scn__lay_seq(struct mb_scn__lay *p, int depth)
{
    while (p->in[p->at] && p->in[p->at] != ')') {
        char c = p->in[p->at];
        if (c == ' ') {
            p->at++;
            continue;
        }
        if (c == '(') {
            size_t open = p->at++;
            size_t from = p->n;
            if (depth > 16) {
                snprintf(p->msg, sizeof p->msg, "groups nested too deep");
                return -1;
            }
            if (mb_scn__lay_seq(p, depth + 1))
                return -1;
            if (p->in[p->at] != ')') {
                p->at = open;
                snprintf(p->msg, sizeof p->msg, "unclosed '('");
                return -1;
            }
            p->at++;
            long k;
            if (mb_scn__lay_count(p, &k))
                return -1;
            size_t glen = p->n - from;
            char grp[1024];
            if (glen >= sizeof grp) {
                snprintf(p->msg, sizeof p->msg, "group too long");
                return -1;
            }
            memcpy(grp, p->out + from, glen);
            p->n = from;
            for (long r = 0; r < k; r++)
                for (size_t i = 0; i < glen; i++)
                    if (mb_scn__lay_put(p, grp[i]))
                        return -1;
            continue;
        }
        if (!strchr("EtmL|", c)) {
            snprintf(p->msg, sizeof p->msg, "unexpected '%c'; expected E, t, m, L, |, (...) or *N", c);
            return -1;
        }
        p->at++;
        long k;
        if (mb_scn__lay_count(p, &k))
            return -1;
        for (long r = 0; r < k; r++)
            if (mb_scn__lay_put(p, c))
                return -1;
    }
    return 0;
}

int mb_pipeline_layout_expand(const char *in, char *out, size_t len, size_t *bad, char *msg, size_t msglen)
{
    struct mb_scn__lay p = {in, 0, out, 0, len, ""};
    out[0] = '\0';
    if (mb_scn__lay_seq(&p, 0) == 0 && in[p.at] == ')')
        snprintf(p.msg, sizeof p.msg, "')' without '('");
    if (p.msg[0]) {
        *bad = p.at;
        snprintf(msg, msglen, "%s", p.msg);
        out[0] = '\0';
        return -1;
    }
    return 0;
}
