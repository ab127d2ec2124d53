/*
 * mb_validate_map.c -- names and labels of a measured run mapped onto mbsim: string helpers, systems,
 * precisions, recompute cells.
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

/* ------------------------------------------------------------------ */
/* small string helpers                                               */
/* ------------------------------------------------------------------ */

/* Copy with truncation; always NUL-terminates (len > 0). */
void mb_validate__copy_str(char *dst, size_t len, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= len)
        n = len - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Trim ASCII whitespace in place; returns the first non-space char. */
char *mb_validate__trim(char *s)
{
    char *e;
    while (*s && isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

void mb_validate__lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

int mb_validate__starts_with_ci(const char *s, const char *pre)
{
    for (; *pre; s++, pre++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*pre))
            return 0;
    return 1;
}

static int mb_validate__contains_ci(const char *s, const char *needle)
{
    for (; *s; s++)
        if (mb_validate__starts_with_ci(s, needle))
            return 1;
    return 0;
}

/* Remove every "(...)" group (nesting aware) from s in place. */
static void mb_validate__strip_parens(char *s)
{
    char *w = s;
    int depth = 0;
    for (; *s; s++) {
        if (*s == '(')
            depth++;
        else if (*s == ')' && depth > 0)
            depth--;
        else if (depth == 0)
            *w++ = *s;
    }
    *w = '\0';
}

/* ------------------------------------------------------------------ */
/* mappings                                                           */
/* ------------------------------------------------------------------ */

static const struct {
    const char *csv, *key;
} mb_val__systems[] = {
    {"DGX-H100", "dgx_h100"},       {"H100-SXM-80GB", "h100_sxm"},    {"DGX-B200", "dgx_b200"},
    {"DGX-B300", "dgx_b300"},       {"DGX-GB200", "gb200_nvl72"},     {"DGX-GB300", "gb300_nvl72"},
    {"DGX-A100-80GB", "dgx_a100"},
};

/* The recipe columns (mb_val_rcol order), as the CSV header names them. */
const char *const mb_val__rcolname[MB_VAL_RC_COUNT] = {
    "dispatcher", "ep_overlap", "cuda_graph",  "recompute_detail", "tp_overlap", "fsdp_impl",
    "cpu_offload", "fp8_recipe", "ce_fusion", "mtp_layers",       "pp_layout",  "other_recipe",
};

static int mb_validate__ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

const char *mb_validate_system_key(const char *csv_system)
{
    char buf[64];
    size_t i;
    if (!csv_system)
        return NULL;
    mb_validate__copy_str(buf, sizeof buf, csv_system);
    const char *t = mb_validate__trim(buf);
    for (i = 0; i < sizeof mb_val__systems / sizeof mb_val__systems[0]; i++) {
        const char *c = mb_val__systems[i].csv;
        if (strlen(c) == strlen(t) && mb_validate__starts_with_ci(t, c))
            return mb_val__systems[i].key;
    }
    /* mbsim's own preset names (gb200_nvl72, dgx_h100_4nic, ...) stand for themselves, and so
     * does the path of a system file (relative to the working directory, as scenarios' are) */
    if (strcmp(t, csv_system))
        return NULL;
    if (mb_topo_is_preset(csv_system))
        return csv_system;
    return strchr(csv_system, '/') && (mb_validate__ends_with(csv_system, ".yaml") || mb_validate__ends_with(csv_system, ".yml")) &&
                   mb_file_exists(csv_system)
               ? csv_system
               : NULL;
}

static int mb_validate__is_blackwell(const char *key)
{
    if (!key)
        return 0;
    if (!strcmp(key, "dgx_b200") || !strcmp(key, "dgx_b300") || !strcmp(key, "gb200_nvl72") ||
        !strcmp(key, "gb300_nvl72"))
        return 1;
    if (!strchr(key, '/'))
        return 0;
    /* a system file: its GPU */
    struct mb_system *sys = mb_calloc(1, sizeof *sys);
    struct mb_err err;
    mb_err_clear(&err);
    int bw = mb_topo_load_system(key, sys, &err) == 0 && mb_topo_gpu_blackwell(sys->gpu);
    mb_free(sys);
    return bw;
}

/* mb_precision_parse, retried with '-' -> '_' (fp8-cs -> fp8_cs). */
void mb_validate_precision_key(const char *label, char *out, size_t n)
{
    mb_validate__copy_str(out, n, label);
    mb_validate__lower(out);
    for (char *p = out; *p; p++)
        if (*p == '-' || *p == ' ')
            *p = '_';
}

static int mb_validate__parse_prec_base(const char *base, struct mb_precision *out)
{
    char alt[64];
    if (mb_precision_parse(base, out) == 0)
        return 0;
    mb_validate_precision_key(base, alt, sizeof alt);
    return mb_precision_parse(alt, out) == 0 ? 0 : -1;
}

int mb_validate_precision(const char *label, const char *system_key, struct mb_precision *out,
                          char *why, size_t why_len)
{
    char buf[160];
    const char *base;
    char *t;
    int fp8_attn;

    mb_validate__copy_str(buf, sizeof buf, label ? label : "");
    t = mb_validate__trim(buf);
    if (!*t) {
        snprintf(why, why_len, "precision not stated");
        return -1;
    }
    fp8_attn = mb_validate__contains_ci(t, "FP8 attention") || mb_validate__contains_ci(t, "FP8_DPA=True");
    if (mb_validate__starts_with_ci(t, "FP8-finer-granularity")) {
        /* The publisher's footnote: MXFP8 on GB200/B200, 128x128 blockwise on H100. */
        base = mb_validate__is_blackwell(system_key) ? "MXFP8" : "FP8-blockwise";
    } else if (mb_validate__starts_with_ci(t, "FP8") && mb_validate__contains_ci(t, "tensorwise current scaling")) {
        base = "FP8-CS";
    } else {
        mb_validate__strip_parens(t);
        base = mb_validate__trim(t);
    }
    if (!*base || mb_validate__parse_prec_base(base, out) != 0) {
        char shown[80];
        mb_validate__copy_str(shown, sizeof shown, label);
        snprintf(why, why_len, "precision '%s' not recognised", shown);
        return -1;
    }
    if (fp8_attn)
        out->attn = MB_PREC_FP8;
    return 0;
}

/* One recompute module name (already trimmed, lower case); 0 if unknown. */
unsigned mb_validate__rc_module(const char *name)
{
    if (!strcmp(name, "up_proj"))
        name = "mla_up_proj";
    return mb_recompute_module(name);
}

int mb_validate_recompute(const char *cell, enum mb_rc_gran *gran, unsigned *modules, char *why,
                          size_t why_len)
{
    char buf[256];
    char *t, *list, *end, *item, *save = NULL;
    unsigned mods = 0;

    *gran = MB_RC_NONE;
    *modules = 0;
    mb_validate__copy_str(buf, sizeof buf, cell ? cell : "");
    mb_validate__lower(buf);
    mb_validate__strip_parens(buf);
    t = mb_validate__trim(buf);

    if (!*t || !strncmp(t, "none", 4))
        return 0;
    if (!strncmp(t, "full", 4)) {
        *gran = MB_RC_FULL;
        return 0;
    }
    if (!strncmp(t, "selective", 9)) {
        t = mb_validate__trim(t + 9);
        if (*t == ':')
            t = mb_validate__trim(t + 1);
        if (!*t) { /* "selective" alone: Megatron's default module list */
            *gran = MB_RC_SELECTIVE;
            *modules = MB_RCM_CORE_ATTN;
            return 0;
        }
    }
    /* t is a module list: "[a, b] [suffix]" or "a, b [suffix]" */
    if (*t == '[') {
        list = t + 1;
        end = strchr(list, ']');
        if (end)
            *end = '\0';
    } else {
        list = t;
        end = strchr(list, '[');
        if (end)
            *end = '\0';
    }
    for (item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *name = mb_validate__trim(item);
        size_t n = strlen(name);
        unsigned f;
        if (n >= 2 && (name[0] == '\'' || name[0] == '"') && name[n - 1] == name[0]) {
            name[n - 1] = '\0';
            name = mb_validate__trim(name + 1);
        }
        if (!*name)
            continue;
        f = mb_validate__rc_module(name);
        if (!f) {
            char shown[64];
            mb_validate__copy_str(shown, sizeof shown, name);
            snprintf(why, why_len, "recompute module '%s' not known", shown);
            return -1;
        }
        mods |= f;
    }
    if (mods) {
        *gran = MB_RC_SELECTIVE;
        *modules = mods;
    }
    return 0;
}
