/*
 * test_report_keys.c -- the key table of `mbsim run --json` (sim/cli/report_keys.c) is the report's
 * contract: docs/cli.md lists exactly the table (generated: `test_report_keys --regen-doc` rewrites it),
 * every key a report emits is in the table, and every key of the table is emitted by the fixtures below.
 * A key renamed in report_json.c and not in the table, or documented and no longer written, fails here.
 * The binary comes from $MBSIM_BIN (set by CTest); fixtures use the fixture calibration table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "report_keys.h"
#include "test_doc_util.h"

#define DOC MBSIM_SOURCE_DIR "/docs/cli.md"
static const char BEGIN[] = "<!-- report-keys:begin (generated from sim/cli/report_keys.c; test_report_keys --regen-doc) -->\n";
static const char END[] = "<!-- report-keys:end -->";

/* docs/cli.md carries the table as generated. */
static void test_doc_is_the_table(void **state)
{
    (void)state;
    char *doc = doc_read_all(DOC);
    const char *why;
    if (!doc_section_current(doc, BEGIN, END, mb_report_keys_doc, &why))
        fail_msg("the report's key list in %s %s; run: build/tests/test_report_keys --regen-doc", DOC, why);
    free(doc);
}

/* Paths are unique, and each has its parent (`a` of `a.b`, `a` of `a[]`) in the table as an object,
 * an array or a map. */
static void test_table_is_a_tree(void **state)
{
    (void)state;
    for (const struct mb_report_key *k = mb_report_keys; k->path; k++) {
        for (const struct mb_report_key *j = k + 1; j->path; j++)
            if (!strcmp(j->path, k->path))
                fail_msg("%s is in the table twice", k->path);
        char parent[160];
        if (snprintf(parent, sizeof parent, "%s", k->path) >= (int)sizeof parent)
            fail_msg("key path %s is longer than %zu characters", k->path, sizeof parent - 1);
        char *dot = strrchr(parent, '.'), *br = strstr(parent, "[]");
        char *cut = dot && (!br || dot > br) ? dot : br;
        if (!cut)
            continue;
        *cut = '\0';
        size_t pl = strlen(parent); /* the parent of `a[].b` is the array `a` */
        if (pl > 2 && !strcmp(parent + pl - 2, "[]"))
            parent[pl - 2] = '\0';
        const struct mb_report_key *p = mb_report_key_find(parent);
        if (!p)
            fail_msg("%s has no parent %s in the table", k->path, parent);
        if (strcmp(p->type, "object") && strcmp(p->type, "array"))
            fail_msg("%s's parent %s is a %s", k->path, parent, p->type);
    }
}

static void walk(json_t *v, const char *path, int *seen);

/* The keys of object o at prefix (`a`, or `a[]` for an array's elements): a key the table names, else
 * the prefix's map entry `prefix.*` when there is one. */
static void walk_keys(json_t *o, const char *prefix, int *seen)
{
    const char *key;
    json_t *c;
    json_object_foreach(o, key, c) {
        char p[256], star[256];
        if (snprintf(p, sizeof p, "%s%s%s", prefix, prefix[0] ? "." : "", key) >= (int)sizeof p ||
            snprintf(star, sizeof star, "%s.*", prefix) >= (int)sizeof star)
            fail_msg("key path %s.%s is longer than %zu characters", prefix, key, sizeof p - 1);
        walk(c, mb_report_key_find(p) || !mb_report_key_find(star) ? p : star, seen);
    }
}

/* What a report emitted, as table paths; seen[] marks the table's entries. */
static void walk(json_t *v, const char *path, int *seen)
{
    const struct mb_report_key *k = mb_report_key_find(path);
    if (!k)
        fail_msg("`mbsim run --json` writes %s, which report_keys.c does not list", path);
    seen[k - mb_report_keys] = 1;
    if (json_is_object(v)) {
        walk_keys(v, path, seen);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        char p[256];
        if (snprintf(p, sizeof p, "%s[]", path) >= (int)sizeof p)
            fail_msg("key path %s[] is longer than %zu characters", path, sizeof p - 1);
        json_array_foreach(v, i, c) {
            if (json_is_object(c))
                walk_keys(c, p, seen);
        }
    }
}

static json_t *run_json(const char *scenario)
{
    char cmd[1024];
    const char *bin = getenv("MBSIM_BIN");
    if (!bin)
        fail_msg("MBSIM_BIN is not set: run this test through ctest, or set it to the mbsim binary");
    snprintf(cmd, sizeof cmd, "%s run %s/%s --json", bin, MBSIM_SOURCE_DIR, scenario);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t e;
    json_t *o = json_loadf(p, 0, &e);
    int rc = pclose(p);
    if (!o || rc != 0)
        fail_msg("%s: exit %d, %s", cmd, rc, o ? "" : e.text);
    return o;
}

/* Every emitted key is in the table, and every key of the table is emitted by one of the fixtures. */
static void test_emitted_keys_are_the_table(void **state)
{
    (void)state;
    static const char *const fixtures[] = {
        "tests/data/report/measured_all.yaml",      /* every measured key; TP, PP, DP collectives */
        "tests/data/step/qwen3_30b_h100_16_ep.yaml", /* MoE: dispatch terms, EP */
        "tests/data/step/cp_a2a.yaml",               /* context parallelism */
    };
    size_t n = 0;
    while (mb_report_keys[n].path)
        n++;
    int *seen = calloc(n, sizeof *seen);
    for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
        json_t *o = run_json(fixtures[f]);
        walk_keys(o, "", seen);
        json_decref(o);
    }
    for (size_t i = 0; i < n; i++)
        if (!seen[i])
            fail_msg("report_keys.c lists %s, which no fixture's report writes", mb_report_keys[i].path);
    free(seen);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--regen-doc"))
        return doc_regen(DOC, BEGIN, END, mb_report_keys_doc);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doc_is_the_table),
        cmocka_unit_test(test_table_is_a_tree),
        cmocka_unit_test(test_emitted_keys_are_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
