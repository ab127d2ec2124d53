/*
 * test_fabric.c -- link graph built from a system (topology/mb_fabric.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "mb_calib.h"
#include "mb_fabric.h"

/* Link parameters from the H100 test fixture tests/data/calib/fixture_H100.yaml (not the shipped
 * table, so recalibrating it does not move these expectations): NVLink eff 0.8, NIC eff 0.9,
 * 1 us / 5 us per step, NVLS eff 0.6 / 100 us. Filled the way `mbsim collective` fills them. */
static struct mb_fabric_params H100P;

static int setup(void **state)
{
    (void)state;
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_calib_load("H100", "tests/data/calib/fixture_H100.yaml", &c, &e))
        return -1;
    H100P.nvlink_eff = mb_calib_link_eff(c, MB_LINK_NVLINK);
    H100P.nic_eff = mb_calib_link_eff(c, MB_LINK_NIC);
    H100P.nvls_eff = mb_calib_link_eff(c, MB_LINK_NVLS);
    H100P.nvlink_lat = mb_calib_link_latency(c, MB_LINK_NVLINK);
    H100P.nic_lat = mb_calib_link_latency(c, MB_LINK_NIC);
    H100P.nvls_lat = mb_calib_link_latency(c, MB_LINK_NVLS);
    mb_calib_free(c);
    return 0;
}

/* 16 GPUs of dgx_h100: 4 links per GPU + 2 per leaf (8 rails x 1 node group); routes as documented. */
static void test_dgx_h100(void **state)
{
    (void)state;
    struct mb_system sys;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("dgx_h100", &sys, &e), 0);
    struct mb_engine *eng = mb_engine_new();
    struct mb_fabric *f = mb_fabric_build(eng, &sys, 16, &H100P, &e);
    assert_non_null(f);
    assert_int_equal(mb_fabric_n_leaves(f), 8);
    int tx3 = mb_fabric_link(f, MB_FABRIC_NVL_TX, 3);
    /* line rate (dgx_h100: NVLink 450 GB/s, NIC 50 GB/s per GPU) x the fixture's efficiency */
    assert_true(mb_dbl_eq(mb_fabric_link_capacity(f, tx3), 450e9 * 0.8));
    assert_true(mb_dbl_eq(mb_fabric_link_capacity(f, mb_fabric_link(f, MB_FABRIC_NIC_TX, 3)), 50e9 * 0.9));
    int l[4];
    /* same node: NVLink port out, port in */
    assert_int_equal(mb_fabric_route(f, 3, 5, l), 2);
    assert_int_equal(l[0], tx3);
    assert_int_equal(l[1], mb_fabric_link(f, MB_FABRIC_NVL_RX, 5));
    /* same rail, other node: one leaf, NIC to NIC */
    assert_int_equal(mb_fabric_route(f, 3, 11, l), 2);
    assert_int_equal(l[0], mb_fabric_link(f, MB_FABRIC_NIC_TX, 3));
    assert_int_equal(l[1], mb_fabric_link(f, MB_FABRIC_NIC_RX, 11));
    /* other rail, other node: leaf up, spine, leaf down */
    assert_int_equal(mb_fabric_route(f, 3, 12, l), 4);
    assert_int_equal(l[1], mb_fabric_link(f, MB_FABRIC_LEAF_UP, 3));
    assert_int_equal(l[2], mb_fabric_link(f, MB_FABRIC_LEAF_DOWN, 4));
    const struct mb_coll_net *net = mb_fabric_net(f);
    assert_int_equal(net->domain_size, 8);
    assert_true(net->nvls);
    /* the table's NVLS entry: 450 GB/s x 0.6, 100 us per all-reduce */
    assert_true(mb_dbl_eq(net->nvls_bw, 450e9 * 0.6));
    assert_true(mb_dbl_eq(net->nvls_lat, 100e-6));
    mb_fabric_free(f);
    /* a table without an NVLS entry (eff 0): the documented default MB_FABRIC_NVLS_EFF */
    struct mb_fabric_params nonvls = H100P;
    nonvls.nvls_eff = 0;
    f = mb_fabric_build(eng, &sys, 16, &nonvls, &e);
    assert_non_null(f);
    assert_true(mb_dbl_eq(mb_fabric_net(f)->nvls_bw, 450e9 * MB_FABRIC_NVLS_EFF));
    mb_fabric_free(f);
    mb_engine_free(eng);
}

/* NVL72: 144 GPUs = 2 racks; tray-to-tray in a rack is NVLink, rack-to-rack is NIC; leaf uplink tapered. */
static void test_nvl72(void **state)
{
    (void)state;
    struct mb_system sys;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("gb200_nvl72", &sys, &e), 0);
    sys.oversubscription = 2;
    struct mb_engine *eng = mb_engine_new();
    struct mb_fabric *f = mb_fabric_build(eng, &sys, 144, &H100P, &e);
    assert_non_null(f);
    int l[4];
    assert_int_equal(mb_fabric_route(f, 0, 71, l), 2);
    assert_int_equal(l[0], mb_fabric_link(f, MB_FABRIC_NVL_TX, 0));
    assert_int_equal(mb_fabric_route(f, 0, 72, l), 2); /* rail 0, node 18 < 32: same leaf */
    assert_int_equal(l[0], mb_fabric_link(f, MB_FABRIC_NIC_TX, 0));
    assert_int_equal(mb_fabric_route(f, 0, 73, l), 4);
    double up = mb_fabric_link_capacity(f, mb_fabric_link(f, MB_FABRIC_LEAF_UP, 0));
    assert_true(mb_dbl_eq(up, MB_FABRIC_LEAF_NODES * sys.nic_bw * 0.9 / 2));
    mb_fabric_free(f);
    mb_engine_free(eng);
}

/* Bad GPU counts and parameters. */
static void test_bad(void **state)
{
    (void)state;
    struct mb_system sys;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("dgx_h100", &sys, &e), 0);
    struct mb_engine *eng = mb_engine_new();
    assert_null(mb_fabric_build(eng, &sys, 12, &H100P, &e));
    assert_string_equal(e.msg, "fabric: 12 GPUs on system 'dgx_h100': expected 1..8 or a multiple of 8 GPUs per node");
    struct mb_fabric_params bad = H100P;
    bad.nic_eff = 1.5;
    mb_err_clear(&e);
    assert_null(mb_fabric_build(eng, &sys, 8, &bad, &e));
    assert_string_equal(e.msg, "fabric: efficiencies must be in (0, 1] and latencies >= 0");
    mb_engine_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dgx_h100), cmocka_unit_test(test_nvl72),
                                       cmocka_unit_test(test_bad)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
