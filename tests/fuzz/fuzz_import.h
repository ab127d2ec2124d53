/*
 * fuzz_import.h -- shared by fuzz_import_megatron.c and fuzz_import_bridge.c
 * (docs/robustness.md): read an input as Megatron-LM arguments or
 * Megatron-Bridge overrides and import it against dgx_h100 (the GPU count from
 * the input, else one node of 8); when it imports, the round-trip oracle: the
 * scenario emitted as flags (`--emit`) and imported back with the same model
 * and GPU count must give the same scenario -- every key of the key table
 * that means something for it (mb_megatron_key_applies) with the same value,
 * so the same prediction. A difference aborts (a
 * finding) and prints the key and both values.
 *
 * MBSIM_FUZZ_PARSE_ONLY set: the reader alone (mb_megatron_read), at reader
 * speed; the plain run fuzzes the import (model match, rules, the scenario
 * check of the reload) and the oracle.
 */
#ifndef MB_FUZZ_IMPORT_H
#define MB_FUZZ_IMPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "mb_keys.h"
#include "mb_megatron.h"

static FILE *fuzz_import_null(void)
{
    static FILE *f;
    if (!f && !(f = fopen("/dev/null", "w")))
        abort();
    return f;
}

/* Read path in dialect d and import it; 0 with *s loaded, else -1. */
static int fuzz_import_one(const char *path, enum mb_megatron_dialect d, const struct mb_megatron_opts *o,
                           struct mb_scenario *s, struct mb_err *e)
{
    struct mb_megatron_args a;
    mb_err_clear(e);
    if (mb_megatron_read(path, d, &a, e))
        return -1;
    int rc = mb_megatron_import(&a, o, s, fuzz_import_null(), e);
    mb_megatron_args_free(&a);
    return rc;
}

/* Keys the emitted flags do not carry: the scenario's name is the file's stem, a key without
 * meaning for the scenario (import notes it; it changes no prediction, and --emit leaves it out),
 * and the measured.* results a training log's iteration lines give (what the run measured, not
 * how it was configured: no Megatron flag holds them, and no prediction reads them). */
static int fuzz_import_skip_key(const struct mb_scenario *s, const struct mb_key *k)
{
    return !strcmp(k->key, "name") || !strncmp(k->key, "measured.", 9) || k->type == MB_KEY_SPECIAL ||
           !mb_megatron_key_applies(s, k);
}

static int fuzz_import_roundtrip(const uint8_t *data, size_t size, enum mb_megatron_dialect d, const char *ext)
{
    struct mb_err e;
    mb_err_clear(&e);
    const char *path = fuzz_tmp(data, size, ext);
    if (fuzz_parse_only()) {
        struct mb_megatron_args a;
        if (mb_megatron_read(path, d, &a, &e) == 0)
            mb_megatron_args_free(&a);
        return 0;
    }
    struct mb_megatron_opts o = {.system = "dgx_h100", .nodes = 1};
    struct mb_scenario s, s2;
    if (fuzz_import_one(path, d, &o, &s, &e))
        return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem || mb_megatron_emit(&s, d, mem, fuzz_import_null()))
        abort();
    fclose(mem);
    char back[64];
    snprintf(back, sizeof back, "rt.%s", ext);
    const char *path2 = fuzz_tmp((const uint8_t *)text, len, back);
    struct mb_megatron_opts o2 = {.system = "dgx_h100", .gpus = s.gpus, .model = s.model_ref};
    if (fuzz_import_one(path2, d, &o2, &s2, &e)) {
        char msg[1024];
        mb_err_format(&e, msg, sizeof msg);
        fprintf(stderr, "round trip: the emitted flags do not import: %s\n--- emitted:\n%s\n", msg, text);
        abort();
    }
    size_t nk;
    const struct mb_key *k = mb_keys(&nk);
    for (size_t i = 0; i < nk; i++) {
        char v1[1100], v2[1100];
        if (fuzz_import_skip_key(&s, &k[i]))
            continue;
        mb_key_format(&s, &k[i], v1, sizeof v1);
        mb_key_format(&s2, &k[i], v2, sizeof v2);
        if (strcmp(v1, v2)) {
            fprintf(stderr, "round trip: %s = %s, imported back as %s\n--- emitted:\n%s\n", k[i].key, v1, v2, text);
            abort();
        }
    }
    if (strcmp(s.model.name, s2.model.name) || strcmp(s.prec.label, s2.prec.label)) {
        fprintf(stderr, "round trip: model %s / %s, precision %s / %s\n", s.model.name, s2.model.name, s.prec.label,
                s2.prec.label);
        abort();
    }
    free(text);
    mb_scenario_free(&s2);
    mb_scenario_free(&s);
    return 0;
}

#endif /* MB_FUZZ_IMPORT_H */
