/*
 * test_util.c -- tolerance helpers, the seeded PRNG and count nouns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dbl), cmocka_unit_test(test_rng),
                                       cmocka_unit_test(test_plural),
                                       cmocka_unit_test(test_edit_distance)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
