/*
 * test_util.c -- tolerance helpers, the seeded PRNG and count nouns.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "mb_text.h"
#include "mb_util.h"

static void test_dbl(void **state)
{
    (void)state;
    assert_true(mb_dbl_eq(1.0, 1.0 + 1e-12));
    assert_false(mb_dbl_eq(1.0, 1.0 + 1e-6));
    assert_true(mb_dbl_eq(1e12, 1e12 * (1 + 1e-10))); /* relative above 1 */
    assert_true(mb_dbl_sub_clamp(1.0, 1.0 + 1e-12) == 0.0);
    assert_true(mb_dbl_sub_clamp(1.0, 2.0) == 0.0);
    assert_true(mb_dbl_eq(mb_dbl_sub_clamp(3.0, 1.0), 2.0));
}

/* splitmix64 with seed 0: first output 0xE220A8397B1DCDAF (Steele et al. reference
 * sequence), so the first uniform is 0xE220A8397B1DCDAF >> 11 / 2^53. */
static void test_rng(void **state)
{
    (void)state;
    struct mb_rng r;
    mb_rng_seed(&r, 0);
    double u = mb_rng_uniform(&r);
    assert_true(mb_dbl_eq(u, (double)(0xE220A8397B1DCDAFULL >> 11) / 9007199254740992.0));
    struct mb_rng a, b;
    mb_rng_seed(&a, 42);
    mb_rng_seed(&b, 42);
    for (int i = 0; i < 1000; i++) {
        double x = mb_rng_uniform(&a);
        assert_true(x >= 0 && x < 1);
        assert_true(x == mb_rng_uniform(&b));
    }
}

/* Nouns after a count in messages: singular for exactly one. */
static void test_plural(void **state)
{
    (void)state;
    assert_string_equal(mb_plural(1, "row", "rows"), "row");
    assert_string_equal(mb_plural(0, "row", "rows"), "rows");
    assert_string_equal(mb_plural(2, "row", "rows"), "rows");
    assert_string_equal(mb_plural(-1, "row", "rows"), "rows");
}

/* Optimal string alignment distances worked by hand: "tp" -> "pp" one substitution; "paralel" ->
 * "parallel" one insert; "teh" -> "the" one swap of neighbours (plain Levenshtein says 2);
 * "ca" -> "abc" is 3 under OSA (no edit of a swapped pair; true Damerau says 2); a bound below the
 * distance gives bound + 1. */
static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(mb_edit_distance("tp", "tp", 2), 0);
    assert_int_equal(mb_edit_distance("tp", "pp", 2), 1);
    assert_int_equal(mb_edit_distance("paralel", "parallel", 2), 1);
    assert_int_equal(mb_edit_distance("teh", "the", 2), 1);
    assert_int_equal(mb_edit_distance("ca", "abc", 3), 3);
    assert_int_equal(mb_edit_distance("abcdef", "uvwxyz", 2), 3);
    assert_int_equal(mb_edit_distance("a", "abcd", 1), 2); /* lengths 3 apart: past the bound at once */
}

/* Text quoted in messages (mb_text.h), by the UTF-8 rules of RFC 3629 / Unicode table 3-7: "é" is
 * C3 A9 and the emoji U+1F600 F0 9F 98 80, well formed, kept; a lone 0x80, the overlong C0 AF ('/'),
 * the surrogate ED A0 80, F4 90 80 80 (past U+10FFFF) and a sequence cut at the end (E2 82 of the
 * euro sign E2 82 AC) are escaped byte by byte; C0 controls, DEL and the C1 CSI (C2 9B) too, unless
 * kept; a cut never splits an escape; escaping twice changes nothing. */
static void test_text_escape(void **state)
{
    (void)state;
    char b[128], c[128];
    mb_text_escape(b, sizeof b, "abc \\ x", NULL);
    assert_string_equal(b, "abc \\ x");
    mb_text_escape(b, sizeof b, "caf\xC3\xA9 \xF0\x9F\x98\x80", NULL);
    assert_string_equal(b, "caf\xC3\xA9 \xF0\x9F\x98\x80");
    mb_text_escape(b, sizeof b, "a\x80" "b\xC0\xAF" "c\xED\xA0\x80" "d\xF4\x90\x80\x80", NULL);
    assert_string_equal(b, "a\\x80b\\xC0\\xAFc\\xED\\xA0\\x80d\\xF4\\x90\\x80\\x80");
    mb_text_escape(b, sizeof b, "e\xE2\x82", NULL);
    assert_string_equal(b, "e\\xE2\\x82");
    mb_text_escape(b, sizeof b, "t\tn\n\x1B[31m\x7F\xC2\x9B", NULL);
    assert_string_equal(b, "t\\x09n\\x0A\\x1B[31m\\x7F\\xC2\\x9B");
    mb_text_escape(b, sizeof b, "l1\nl2\t", "\n");
    assert_string_equal(b, "l1\nl2\\x09");
    assert_int_equal(mb_text_escape(b, 6, "ab\x80", NULL), 2); /* "ab\x80" needs 6 + NUL */
    assert_string_equal(b, "ab");
    assert_int_equal(mb_text_escape(b, 4, "a\xC3\xA9", NULL), 3);
    assert_int_equal(mb_text_escape(b, 3, "a\xC3\xA9", NULL), 1); /* not half of the é */
    mb_text_escape(b, sizeof b, "x\x80y\x1B", NULL);
    mb_text_escape(c, sizeof c, b, NULL);
    assert_string_equal(b, c);
    /* the stream: an é split between two writes is joined; a sequence cut at the close is escaped */
    char *out = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&out, &n);
    FILE *fp = mb_text_escape_stream(mem, "\n");
    fputs("k = caf\xC3", fp);
    fflush(fp);
    fputs("\xA9\x01\n\t\xE2\x82", fp);
    fclose(fp);
    fclose(mem);
    assert_string_equal(out, "k = caf\xC3\xA9\\x01\n\\x09\\xE2\\x82");
    free(out);
    /* keep: the tab and carriage return kept as they are, ESC still escaped */
    mem = open_memstream(&out, &n);
    fp = mb_text_escape_stream(mem, "\n\t\r");
    fputs("a\tb\r\x1B[2J\n", fp);
    fclose(fp);
    fclose(mem);
    assert_string_equal(out, "a\tb\r\\x1B[2J\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dbl), cmocka_unit_test(test_rng),
                                       cmocka_unit_test(test_plural),
                                       cmocka_unit_test(test_edit_distance),
                                       cmocka_unit_test(test_text_escape)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
