/*
 * test_yaml.c -- the YAML tree and the table-driven field reader: every
 * loader's error messages come from here, so they are checked exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mb_yaml.h"

struct rec {
    long n;
    double bw;
    double t;
    int flag;
    char name[16];
};

static const struct mb_field rec_fields[] = {
    {"n", MB_F_INT, offsetof(struct rec, n), 0, 1, 1, 100, MB_UNIT_NONE},
    {"bw", MB_F_DOUBLE, offsetof(struct rec, bw), 0, 0, 0, -1, MB_UNIT_BW},
    {"t", MB_F_DOUBLE, offsetof(struct rec, t), 0, 0, 0, -1, MB_UNIT_TIME},
    {"flag", MB_F_BOOL, offsetof(struct rec, flag), 0, 0, 0, -1, MB_UNIT_NONE},
    {"name", MB_F_STRBUF, offsetof(struct rec, name), 16, 0, 0, -1, MB_UNIT_NONE},
    {NULL, 0, 0, 0, 0, 0, 0, 0}};

static int read_rec(const char *text, struct rec *r, char *msg, size_t len)
{
    struct mb_err e;
    mb_err_clear(&e);
    memset(r, 0, sizeof *r);
    struct mb_node *root = mb_yaml_load_string(text, strlen(text), "t.yaml", &e);
    int rc = root ? mb_yaml_read_fields(root, rec_fields, r, "rec", NULL, &e) : -1;
    mb_err_format(&e, msg, len);
    mb_yaml_free(root);
    return rc;
}

/* Units: 450 GB/s = 450e9 B/s; 400 Gb/s = 400e9/8 = 50e9 B/s; 1.5 us = 1.5e-6 s. */
static void test_units(void **state)
{
    (void)state;
    struct rec r;
    char msg[600];
    assert_int_equal(read_rec("n: 7\nbw: 450 GB/s\nt: 1.5 us\nflag: true\nname: abc\n", &r, msg, sizeof msg), 0);
    assert_int_equal(r.n, 7);
    assert_true(mb_dbl_eq(r.bw, 450e9));
    assert_true(mb_dbl_eq(r.t, 1.5e-6));
    assert_int_equal(r.flag, 1);
    assert_string_equal(r.name, "abc");
    assert_int_equal(read_rec("n: 1\nbw: 400 Gb/s\n", &r, msg, sizeof msg), 0);
    assert_true(mb_dbl_eq(r.bw, 50e9));
}

static void test_errors(void **state)
{
    (void)state;
    struct rec r;
    char msg[600];
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"n: 1\nbogus: 2\n", "t.yaml:2:1: unknown key 'bogus' in rec; expected one of: n, bw, t, flag, name"},
        {"n: 1\nn: 2\n", "t.yaml:2:1: duplicate key 'n' (first defined at line 1)"},
        {"n: four\n", "t.yaml:1:4: rec.n: expected an integer, got 'four'"},
        {"n: 0\n", "t.yaml:1:4: rec.n = 0 is out of range [1, 100]"},
        {"n: [1]\n", "t.yaml:1:4: rec.n: expected an integer, got a sequence"},
        /* a well-formed integer too large for a long is out of the field's range, not "no integer" */
        {"n: 99999999999999999999\n", "t.yaml:1:4: rec.n = 99999999999999999999 is out of range [1, 100]"},
        {"n: -99999999999999999999\n", "t.yaml:1:4: rec.n = -99999999999999999999 is out of range [1, 100]"},
        {"n: 1\nbw: 450 GB\n",
         "t.yaml:2:5: bad unit 'GB' in '450 GB': expected a bandwidth with a unit (B/s, KB/s, MB/s, GB/s, TB/s, "
         "Mb/s, Gb/s, Gbit/s, Tb/s, GiB/s)"},
        {"n: 1\nbw: 450\n",
         "t.yaml:2:5: bad unit '' in '450': expected a bandwidth with a unit (B/s, KB/s, MB/s, GB/s, TB/s, Mb/s, "
         "Gb/s, Gbit/s, Tb/s, GiB/s)"},
        {"n: 1\nflag: maybe\n", "t.yaml:2:7: expected true or false, got 'maybe'"},
        {"n: 1\nname: abcdefghijklmnopqrstuvwxyz\n", "t.yaml:2:7: rec.name is too long (at most 15 characters)"},
        {"- 1\n- 2\n", "t.yaml:1:1: expected a mapping for 'rec', got a sequence"},
        {"n: 1\n---\nn: 2\n", "t.yaml:3:1: a second YAML document starts here; mbsim files hold one document"},
        {"n: [1, 2\n", "t.yaml:2:1: YAML syntax error: did not find expected ',' or ']' while parsing a flow sequence"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(read_rec(cases[i].text, &r, msg, sizeof msg), -1);
        assert_string_equal(msg, cases[i].msg);
    }
}

/* mb_yaml_int / mb_yaml_double without a range: a number that does not fit says so (LONG_MAX and
 * DBL_MAX are the limits of long and double on this platform). */
static void test_out_of_range(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int is_int;
        const char *msg;
    } cases[] = {
        {"99999999999999999999", 1, "t.yaml:1:1: '99999999999999999999' is out of range for an integer"},
        {"1e999", 0, "t.yaml:1:1: '1e999' is out of range for a number (magnitude from 2.2e-308 to 1.8e+308, or 0)"},
        {"-1e999", 0, "t.yaml:1:1: '-1e999' is out of range for a number"},
        {"1e-999", 0, "t.yaml:1:1: '1e-999' is out of range for a number"},
        {"inf", 0, "t.yaml:1:1: expected a number, got 'inf'"},
        {"12x", 1, "t.yaml:1:1: expected an integer, got '12x'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mb_err e;
        mb_err_clear(&e);
        struct mb_node *n = mb_yaml_load_string(cases[i].text, strlen(cases[i].text), "t.yaml", &e);
        assert_non_null(n);
        long iv;
        double dv;
        assert_int_equal(cases[i].is_int ? mb_yaml_int(n, &iv, &e) : mb_yaml_double(n, &dv, &e), -1);
        char msg[600];
        mb_err_format(&e, msg, sizeof msg);
        if (!strstr(msg, cases[i].msg))
            fail_msg("'%s': expected '%s', got '%s'", cases[i].text, cases[i].msg, msg);
        mb_yaml_free(n);
    }
}

/* Missing required key: reported at the mapping's position. */
static void test_required(void **state)
{
    (void)state;
    static const struct mb_field req[] = {{"must", MB_F_INT, 0, 0, 1, 0, -1, MB_UNIT_NONE},
                                          {NULL, 0, 0, 0, 0, 0, 0, 0}};
    struct mb_err e;
    mb_err_clear(&e);
    long v = 0;
    struct mb_node *root = mb_yaml_load_string("other: 1\n", 9, "r.yaml", &e);
    assert_non_null(root);
    static const struct mb_field req2[] = {{"must", MB_F_INT, 0, 0, 1, 0, -1, MB_UNIT_NONE},
                                           {"other", MB_F_INT, 0, 0, 0, 0, -1, MB_UNIT_NONE},
                                           {NULL, 0, 0, 0, 0, 0, 0, 0}};
    (void)req;
    assert_int_equal(mb_yaml_read_fields(root, req2, &v, "thing", NULL, &e), -1);
    char msg[600];
    mb_err_format(&e, msg, sizeof msg);
    assert_string_equal(msg, "r.yaml:1:1: missing required key 'must' in thing");
    mb_yaml_free(root);
}

/* An unreadable file names the file; the first error wins and later ones are counted. */
static void test_file_and_first_error(void **state)
{
    (void)state;
    struct mb_err e;
    mb_err_clear(&e);
    assert_null(mb_yaml_load_file("/nonexistent/x.yaml", &e));
    char msg[600];
    mb_err_format(&e, msg, sizeof msg);
    assert_string_equal(msg, "/nonexistent/x.yaml: cannot open: No such file or directory");
    mb_err_set(&e, "a", 1, 1, "second");
    assert_int_equal(e.count, 2);
    assert_string_equal(e.msg, "cannot open: No such file or directory");
}

/* A few lines of nested aliases would expand to 10^12 nodes: the loader stops at
 * its budget of alias copies (mb_yaml.c MB_YAML_MAX_ALIAS_NODES = 100,000) with the
 * position of the alias that crossed it, in well under a second. */
/* libyaml's reader errors carry a byte offset, not a mark (mb_yaml.c mb_yaml__reader_mark):
 * "a: 1\nbb: x<NUL>y\n" has its NUL at byte 11, line 2 (after one newline), column 6 ("bb: x"
 * is five bytes before it); an invalid UTF-8 continuation byte likewise at its own column. */
static void test_reader_error_position(void **state)
{
    (void)state;
    static const char nul[] = "a: 1\nbb: x\0y\n";
    struct mb_err e;
    mb_err_clear(&e);
    assert_null(mb_yaml_load_string(nul, sizeof nul - 1, "nul.yaml", &e));
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 6);
    assert_non_null(strstr(e.msg, "control characters"));
    static const char utf[] = "k: ab\xc3\x28\n"; /* C3 opens a two-byte sequence, 28 does not continue it */
    mb_err_clear(&e);
    assert_null(mb_yaml_load_string(utf, sizeof utf - 1, "utf.yaml", &e));
    assert_int_equal(e.line, 1);
    assert_int_equal(e.col, 7); /* libyaml's offset is the byte that does not continue: "k: ab" and C3 before it */
    /* columns count characters, as libyaml's own marks do: "k: h\xc3\xa9llo" is 9 bytes and 8 characters
     * (é is two bytes), so the NUL after it is at column 9 */
    static const char wide[] = "k: h\xc3\xa9llo\0\n";
    mb_err_clear(&e);
    assert_null(mb_yaml_load_string(wide, sizeof wide - 1, "wide.yaml", &e));
    assert_int_equal(e.line, 1);
    assert_int_equal(e.col, 9);
}

static void test_alias_bomb(void **state)
{
    (void)state;
    struct mb_err e;
    mb_err_clear(&e);
    assert_null(mb_yaml_load_file("tests/data/yaml/alias_bomb.yaml", &e));
    assert_non_null(strstr(e.msg, "aliases expand to more than 100000 nodes"));
    assert_true(e.line > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_errors), cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_required),
        cmocka_unit_test(test_file_and_first_error),
        cmocka_unit_test(test_alias_bomb),
        cmocka_unit_test(test_reader_error_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
