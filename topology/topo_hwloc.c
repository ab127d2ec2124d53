/*
 * topo_hwloc.c -- read one node's description from an hwloc 2.x XML file.
 *
 * This is the only file in mbsim that includes <hwloc.h>. It follows the
 * recipe of STYLE.md point 16: init -> set_xml -> keep important I/O objects
 * -> load -> walk PCI and OS devices -> NVLinkBandwidth distances -> copy
 * everything into struct mb_node_topo -> destroy. No hwloc pointer survives
 * the call.
 *
 * What is extracted and how (approximations):
 *  - GPUs: PCI devices of class 0x0302 (3D controller) or 0x0300 (VGA) with
 *    vendor 0x10de. Counting PCI devices (not OS devices) deduplicates the
 *    cuda/nvml/opencl/DRM handles of one board, and works on distro hwloc
 *    builds that have no CUDA/NVML OS devices at all.
 *  - NICs: OpenFabrics OS devices (mlx5_N), one per PCI device. Only when the
 *    XML has none, Mellanox/NVIDIA PCI devices of class 0x0207/0x0200.
 *    hwloc does not record link rates; those come from the system YAML.
 *  - NVLink: the NVLinkBandwidth matrix (MB/s, unidirectional, GPU <-> GPU
 *    or GPU <-> NVSwitch). Per-GPU bandwidth = the GPU's row sum without the
 *    diagonal (injection bandwidth); GPU pairs = the direct entry, or through
 *    NVSwitches min of the two rows (non-blocking switch); islands = the
 *    connected components of the pair graph.
 *  - Rails: each GPU uses its nearest NIC; a NIC that is nobody's nearest
 *    goes to the GPUs closest to it. A GPU's share of NIC line rate is the
 *    sum over its NICs of 1 / (GPUs using that NIC): 2 GPUs behind one NIC's
 *    PCIe switch get half a NIC each. The GPU -> NIC PCIe path rate is the
 *    slowest pci_link_speed between them.
 *  - GPU -> NIC affinity: NCCL's rule (hardware.md C.3.5): the NIC whose
 *    lowest common ancestor with the GPU is deepest in the PCI tree, else one
 *    on the same NUMA node, else any NIC; ties go to the lowest NIC index.
 *
 * hwloc 3.0 renamed osdev.type to the bitmask osdev.types; the two uses are
 * wrapped in mb_topo__is_openfabrics() so a port touches one place.
 */
#include "mb_topo.h"
#include "mb_input.h"
#include "topo_xml.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#define MB_TOPO__NVIDIA   0x10de
#define MB_TOPO__MELLANOX 0x15b3

struct mb_topo__scan {
    hwloc_obj_t gpu[MB_TOPO_MAX_GPUS];  /* GPU PCI devices, in topology order */
    hwloc_obj_t nic[MB_TOPO_MAX_NICS];  /* one object per NIC (PCI device or lone OS device) */
    int n_gpu, n_nic;
    int too_many_gpus, too_many_nics;
};

static int mb_topo__is_openfabrics(hwloc_obj_t o)
{
#if HWLOC_API_VERSION >= 0x00030000
    return (o->attr->osdev.types & HWLOC_OBJ_OSDEV_OPENFABRICS) != 0;
#else
    return o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
#endif
}

static int mb_topo__is_gpu_pci(hwloc_obj_t o)
{
    if (!o || o->type != HWLOC_OBJ_PCI_DEVICE)
        return 0;
    return o->attr->pcidev.vendor_id == MB_TOPO__NVIDIA &&
           (o->attr->pcidev.class_id == 0x0302 || o->attr->pcidev.class_id == 0x0300);
}

/* The PCI device an I/O object belongs to (itself, or its nearest PCI parent). */
static hwloc_obj_t mb_topo__pci_of(hwloc_obj_t o)
{
    while (o && o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    return (o && o->type == HWLOC_OBJ_PCI_DEVICE) ? o : NULL;
}

/* NUMA os_index covering an object's non-I/O ancestor, -1 when it spans
 * several NUMA nodes or none. */
static int mb_topo__numa_of(hwloc_topology_t t, hwloc_obj_t o)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
    if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
        return -1;
    return hwloc_bitmap_first(anc->nodeset);
}

/* Copy an info value into a fixed buffer; 1 if found. */
static int mb_topo__info(hwloc_obj_t o, const char *name, char *buf, size_t len)
{
    const char *v = hwloc_obj_get_info_by_name(o, name);
    if (!v || !v[0])
        return 0;
    snprintf(buf, len, "%s", v);
    return 1;
}

/* GPU model and memory from the OS devices below a GPU PCI device; the first
 * GPU that has them wins. */
static void mb_topo__gpu_details(hwloc_obj_t pci, struct mb_node_topo *out)
{
    hwloc_obj_t c;
    for (c = pci->io_first_child; c; c = c->next_sibling) {
        const char *mem;
        if (c->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        if (!out->gpu_model[0])
            mb_topo__info(c, "GPUModel", out->gpu_model, sizeof out->gpu_model);
        mem = hwloc_obj_get_info_by_name(c, "CUDAGlobalMemorySize");
        if (mem && out->gpu_mem_bytes == 0.0) {
            char *end;
            unsigned long long kib;
            errno = 0;
            kib = strtoull(mem, &end, 10);
            if (errno == 0 && end != mem)
                out->gpu_mem_bytes = (double)kib * 1024.0; /* hwloc writes KiB */
        }
    }
}

/* A GPU whose GPUModel differs from `model` (the first GPU's): its model into
 * out, 1; 0 when every GPU that states one states the same. */
static int mb_topo__mixed_model(const struct mb_topo__scan *s, const char *model, char *out, size_t len)
{
    for (int i = 0; i < s->n_gpu; i++)
        for (hwloc_obj_t c = s->gpu[i]->io_first_child; c; c = c->next_sibling)
            if (c->type == HWLOC_OBJ_OS_DEVICE && mb_topo__info(c, "GPUModel", out, len) && strcmp(out, model))
                return 1;
    return 0;
}

static void mb_topo__add_nic(struct mb_topo__scan *s, hwloc_obj_t o)
{
    int i;
    for (i = 0; i < s->n_nic; i++)
        if (s->nic[i] == o)
            return;
    if (s->n_nic == MB_TOPO_MAX_NICS) {
        s->too_many_nics = 1;
        return;
    }
    s->nic[s->n_nic++] = o;
}

static void mb_topo__find_nics(hwloc_topology_t t, struct mb_topo__scan *s)
{
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_osdev(t, o)) != NULL) {
        hwloc_obj_t pci;
        if (!mb_topo__is_openfabrics(o))
            continue;
        pci = mb_topo__pci_of(o);
        mb_topo__add_nic(s, pci ? pci : o);
    }
    if (s->n_nic > 0)
        return;
    /* No OpenFabrics OS devices (hwloc built without them, or trimmed XML):
     * fall back on Mellanox/NVIDIA InfiniBand and Ethernet PCI functions. */
    o = NULL;
    while ((o = hwloc_get_next_pcidev(t, o)) != NULL) {
        unsigned cls = o->attr->pcidev.class_id;
        if (o->attr->pcidev.vendor_id == MB_TOPO__MELLANOX && (cls == 0x0207 || cls == 0x0200))
            mb_topo__add_nic(s, o);
    }
}

/* Number of parent hops from `from` up to `anc`, or -1 if anc is not an ancestor. */
static int mb_topo__hops(hwloc_obj_t from, hwloc_obj_t anc)
{
    int h = 0;
    for (; from; from = from->parent, h++)
        if (from == anc)
            return h;
    return -1;
}

/* Lowest common ancestor by walking parent pointers (hwloc's own helper
 * compares depths, which are not ordered for I/O objects). */
static hwloc_obj_t mb_topo__lca(hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t x, y;
    for (x = a; x; x = x->parent)
        for (y = b; y; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

static int mb_topo__is_io(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_BRIDGE || o->type == HWLOC_OBJ_PCI_DEVICE ||
           o->type == HWLOC_OBJ_OS_DEVICE;
}

/* Nearest NIC for one GPU: class 0 = shares a PCI subtree (rank by hops to
 * the common ancestor), class 1 = same NUMA node, class 2 = anything else. */
static int mb_topo__nearest_nic(hwloc_topology_t t, const struct mb_topo__scan *s,
                                hwloc_obj_t gpu, int gpu_numa)
{
    int best = -1, best_cls = 3, best_hops = 0, i;
    for (i = 0; i < s->n_nic; i++) {
        hwloc_obj_t lca = mb_topo__lca(gpu, s->nic[i]);
        int cls, hops = 0, nic_numa = mb_topo__numa_of(t, s->nic[i]);
        if (lca && mb_topo__is_io(lca)) {
            cls = 0;
            hops = mb_topo__hops(gpu, lca);
        } else if (gpu_numa >= 0 && nic_numa == gpu_numa) {
            cls = 1;
        } else {
            cls = 2;
        }
        if (best < 0 || cls < best_cls || (cls == best_cls && hops < best_hops)) {
            best = i;
            best_cls = cls;
            best_hops = hops;
        }
    }
    return best;
}

/* GPU index of an object listed in a distances matrix, -1 if not a GPU. */
static int mb_topo__gpu_index(const struct mb_topo__scan *s, hwloc_obj_t o)
{
    hwloc_obj_t pci = mb_topo__pci_of(o);
    int i;
    if (!mb_topo__is_gpu_pci(pci))
        return -1;
    for (i = 0; i < s->n_gpu; i++)
        if (s->gpu[i] == pci)
            return i;
    return -1;
}

/* 1 when a distances object is an NVSwitch (PCI device with subtype NVSwitch,
 * or an OS device below one). */
static int mb_topo__is_nvswitch(hwloc_obj_t o)
{
    hwloc_obj_t pci = mb_topo__pci_of(o);
    return pci && pci->subtype && strcmp(pci->subtype, "NVSwitch") == 0;
}

/* One NVLinkBandwidth matrix into out: per-GPU row sums (MB/s -> bytes/s),
 * GPU pairs (direct entries; through NVSwitches min of the two rows).
 * Returns the number of GPU rows found. */
static int mb_topo__nvlink_matrix(const struct hwloc_distances_s *d, const struct mb_topo__scan *s,
                                  struct mb_node_topo *out)
{
    unsigned n = d->nbobjs, i, j;
    int gi[256], rows = 0, switched = 0;
    if (n > 256)
        return 0;
    for (i = 0; i < n; i++) {
        gi[i] = d->objs[i] ? mb_topo__gpu_index(s, d->objs[i]) : -1;
        if (d->objs[i] && gi[i] < 0 && mb_topo__is_nvswitch(d->objs[i]))
            switched = 1;
    }
    for (i = 0; i < n; i++) {
        int g = gi[i];
        if (g < 0 || out->gpu_nvlink_bw[g] > 0)
            continue; /* not a GPU, or a second OS device of the same GPU */
        double row = 0.0;
        for (j = 0; j < n; j++)
            if (j != i && gi[j] != g)
                row += (double)d->values[(size_t)i * n + j] * 1e6;
        out->gpu_nvlink_bw[g] = row;
        for (j = 0; j < n && !switched; j++)
            if (gi[j] >= 0 && gi[j] != g)
                out->nvlink_pair[g][gi[j]] += (double)d->values[(size_t)i * n + j] * 1e6;
        rows++;
    }
    out->nvlink_switched = switched;
    if (switched)
        for (int a = 0; a < s->n_gpu; a++)
            for (int b = 0; b < s->n_gpu; b++)
                if (a != b && out->gpu_nvlink_bw[a] > 0 && out->gpu_nvlink_bw[b] > 0)
                    out->nvlink_pair[a][b] = fmin(out->gpu_nvlink_bw[a], out->gpu_nvlink_bw[b]);
    return rows;
}

/* NVLink islands: connected components of the GPU pair graph. */
static void mb_topo__islands(struct mb_node_topo *r, int n)
{
    int i, k, changed;
    for (i = 0; i < n; i++)
        r->gpu_island[i] = r->gpu_nvlink_bw[i] > 0 ? i : -1;
    do { /* label propagation: each GPU takes the lowest label of its NVLink peers */
        changed = 0;
        for (i = 0; i < n; i++)
            for (k = 0; k < n; k++)
                if (r->nvlink_pair[i][k] > 0 && r->gpu_island[k] < r->gpu_island[i]) {
                    r->gpu_island[i] = r->gpu_island[k];
                    changed = 1;
                }
    } while (changed);
    int label[MB_TOPO_MAX_GPUS], size[MB_TOPO_MAX_GPUS] = {0}, ok = 1;
    r->n_islands = 0;
    for (i = 0; i < n; i++) {
        if (r->gpu_island[i] < 0) {
            ok = 0;
            continue;
        }
        for (k = 0; k < r->n_islands && label[k] != r->gpu_island[i]; k++)
            ;
        if (k == r->n_islands)
            label[r->n_islands++] = r->gpu_island[i];
        r->gpu_island[i] = k;
        size[k]++;
    }
    if (r->n_islands == 0)
        return;
    for (i = 0; i < n && ok; i++) /* equal islands of consecutive GPUs */
        ok = size[r->gpu_island[i]] == size[0] && r->gpu_island[i] == i / size[0];
    r->island_size = ok ? size[0] : 0;
}

/* The NVLinkBandwidth matrices (several of that name: the first with GPU
 * rows), then nvlink_bw_per_gpu = mean row sum and the islands. */
static void mb_topo__nvlink_bw(hwloc_topology_t t, const struct mb_topo__scan *s, struct mb_node_topo *r)
{
    struct hwloc_distances_s *d[4];
    unsigned nr = 4, k;
    int done = 0;

    if (hwloc_distances_get_by_name(t, "NVLinkBandwidth", &nr, d, 0) < 0)
        return;
    if (nr > 4)
        nr = 4; /* hwloc reports the total; only 4 were filled */
    for (k = 0; k < nr; k++) {
        if (!done)
            done = mb_topo__nvlink_matrix(d[k], s, r) > 0;
        hwloc_distances_release(t, d[k]);
    }
    if (!done)
        return;
    double sum = 0;
    int rows = 0;
    for (int i = 0; i < s->n_gpu; i++)
        if (r->gpu_nvlink_bw[i] > 0) {
            sum += r->gpu_nvlink_bw[i];
            rows++;
        }
    r->nvlink_bw_per_gpu = rows ? sum / rows : 0;
    mb_topo__islands(r, s->n_gpu);
}

/* PCIe link rate of an I/O object (bytes/s), 0 when hwloc has none. */
static double mb_topo__link(hwloc_obj_t o)
{
    float gbs = 0;
    if (o->type == HWLOC_OBJ_PCI_DEVICE)
        gbs = o->attr->pcidev.linkspeed;
    else if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
        gbs = o->attr->bridge.upstream.pci.linkspeed;
    return gbs > 0 ? (double)gbs * 1e9 : 0;
}

/* Slowest PCIe link from `o` up to (not including) `stop`; 0 if none known. */
static double mb_topo__path_min(hwloc_obj_t o, hwloc_obj_t stop, double m)
{
    for (; o && o != stop && mb_topo__is_io(o); o = o->parent) {
        double l = mb_topo__link(o);
        if (l > 0 && (m == 0 || l < m))
            m = l;
    }
    return m;
}

/* Distance class of GPU g to NIC j, as in mb_topo__nearest_nic: 0 shared PCIe
 * subtree (hops added), 1 same NUMA node, 2 elsewhere; smaller is closer. */
static int mb_topo__dist(hwloc_topology_t t, hwloc_obj_t gpu, hwloc_obj_t nic)
{
    hwloc_obj_t lca = mb_topo__lca(gpu, nic);
    if (lca && mb_topo__is_io(lca))
        return mb_topo__hops(gpu, lca) + mb_topo__hops(nic, lca);
    int gn = mb_topo__numa_of(t, gpu);
    return gn >= 0 && gn == mb_topo__numa_of(t, nic) ? 1000 : 2000;
}

/* Rail assignment: each GPU uses its nearest NIC; a NIC that is no GPU's
 * nearest (two NICs per GPU) goes to the GPUs closest to it. Then the users of
 * each NIC, each GPU's share, the PCIe links and the GPU->NIC path. */
static void mb_topo__rails(hwloc_topology_t t, const struct mb_topo__scan *s, struct mb_node_topo *r)
{
    int i, j;
    for (i = 0; i < s->n_gpu; i++)
        if (r->gpu_nic[i] >= 0)
            r->gpu_nics[i] |= (uint64_t)1 << r->gpu_nic[i];
    for (j = 0; j < s->n_nic; j++) {
        int used = 0, best = -1;
        for (i = 0; i < s->n_gpu; i++)
            used |= r->gpu_nic[i] == j;
        if (used)
            continue;
        for (i = 0; i < s->n_gpu; i++) {
            int dd = mb_topo__dist(t, s->gpu[i], s->nic[j]);
            best = best < 0 || dd < best ? dd : best;
        }
        for (i = 0; i < s->n_gpu; i++)
            if (mb_topo__dist(t, s->gpu[i], s->nic[j]) == best)
                r->gpu_nics[i] |= (uint64_t)1 << j;
    }
    for (j = 0; j < s->n_nic; j++) {
        hwloc_obj_t pci = mb_topo__pci_of(s->nic[j]);
        hwloc_obj_t c;
        r->nic_numa[j] = mb_topo__numa_of(t, s->nic[j]);
        r->nic_pcie_bw[j] = pci ? mb_topo__link(pci) : 0;
        for (i = 0; i < s->n_gpu; i++)
            r->nic_users[j] += (r->gpu_nics[i] >> j) & 1;
        r->nic_name[j][0] = '\0';
        for (c = pci ? pci->io_first_child : NULL; c; c = c->next_sibling)
            if (c->type == HWLOC_OBJ_OS_DEVICE && mb_topo__is_openfabrics(c) && c->name)
                snprintf(r->nic_name[j], sizeof r->nic_name[j], "%s", c->name);
        if (!r->nic_name[j][0] && s->nic[j]->type == HWLOC_OBJ_OS_DEVICE && s->nic[j]->name)
            snprintf(r->nic_name[j], sizeof r->nic_name[j], "%s", s->nic[j]->name);
        if (!r->nic_name[j][0] && pci)
            snprintf(r->nic_name[j], sizeof r->nic_name[j], "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                     pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
    }
    for (i = 0; i < s->n_gpu; i++) {
        r->gpu_pcie_bw[i] = mb_topo__link(s->gpu[i]);
        for (j = 0; j < s->n_nic; j++)
            if ((r->gpu_nics[i] >> j) & 1)
                r->gpu_nic_share[i] += 1.0 / r->nic_users[j];
        j = r->gpu_nic[i];
        if (j < 0)
            continue;
        hwloc_obj_t lca = mb_topo__lca(s->gpu[i], s->nic[j]);
        r->gpu_nic_path_bw[i] = mb_topo__path_min(mb_topo__pci_of(s->nic[j]), lca,
                                                  mb_topo__path_min(s->gpu[i], lca, 0));
        r->gpu_nic_cross_numa[i] = !(lca && mb_topo__is_io(lca)) && r->gpu_numa[i] != r->nic_numa[j];
    }
}

/* The error for a file hwloc refuses after mbsim's check (hwloc gives no
 * reason through its API; a version other than 2.x is refused by the check). */
static int mb_topo__load_error(const char *path, struct mb_err *err)
{
    return mb_err_set(err, path, 0, 0, "hwloc cannot load XML (not a valid hwloc topology file)");
}

/* hwloc parses the checked buffer; -1 with err set when it refuses it. */
static int mb_topo__hwloc_load(hwloc_topology_t t, const char *path, const char *buf, size_t len,
                               struct mb_err *err)
{
    /* set_xmlbuffer's size counts the terminating NUL, as export_xmlbuffer's does */
    if (hwloc_topology_set_xmlbuffer(t, buf, (int)len + 1) < 0)
        return mb_topo__load_error(path, err);
    /* Without this filter hwloc drops every PCI and OS device: no GPUs. */
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) < 0)
        return mb_topo__load_error(path, err);
    return 0;
}

/* Node descriptions parsed in this process, by content: a sweep, a validation or an import loads
 * the same few XML files again and again, and the check and hwloc's parse are most of a load. The
 * key is the bytes themselves (not a path and a modification time), so an edited file, or another
 * file written at the same path within the clock's resolution, is parsed anew. Only successes are
 * kept (an error names the path it was read from). */
#define MB_TOPO__MEMO 8
static struct mb_topo__memo {
    char *buf;
    size_t len;
    struct mb_node_topo *r;
} mb_topo__memo[MB_TOPO__MEMO];
static unsigned mb_topo__memo_next;
static pthread_mutex_t mb_topo__memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* 1 with *out filled when buf was parsed before, else 0. */
static int mb_topo__memo_get(const char *buf, size_t len, struct mb_node_topo *out)
{
    int hit = 0;
    pthread_mutex_lock(&mb_topo__memo_lock);
    for (int i = 0; i < MB_TOPO__MEMO && !hit; i++) {
        const struct mb_topo__memo *m = &mb_topo__memo[i];
        if (m->buf && m->len == len && memcmp(m->buf, buf, len) == 0) {
            *out = *m->r;
            hit = 1;
        }
    }
    pthread_mutex_unlock(&mb_topo__memo_lock);
    return hit;
}

/* Keep r as the parse of buf (taking buf), in place of the oldest entry. */
static void mb_topo__memo_put(char *buf, size_t len, const struct mb_node_topo *r)
{
    pthread_mutex_lock(&mb_topo__memo_lock);
    struct mb_topo__memo *m = &mb_topo__memo[mb_topo__memo_next++ % MB_TOPO__MEMO];
    mb_free(m->buf);
    if (!m->r)
        m->r = mb_malloc(sizeof *m->r);
    m->buf = buf;
    m->len = len;
    *m->r = *r;
    pthread_mutex_unlock(&mb_topo__memo_lock);
}

static int mb_topo__parse(const char *path, const char *buf, size_t len, struct mb_node_topo *out,
                          struct mb_err *err);

int mb_topo_load_xml(const char *path, struct mb_node_topo *out, struct mb_err *err)
{
    if (!path || !out)
        return mb_err_set(err, path, 0, 0, "no hwloc XML file given");
    char *buf;
    size_t len;
    if (mb_input_read(path, "an hwloc XML file", 0, &buf, &len, err))
        return -1;
    if (mb_topo__memo_get(buf, len, out)) {
        mb_free(buf);
        return 0;
    }
    if (mb_topo__parse(path, buf, len, out, err)) {
        mb_free(buf);
        return -1;
    }
    mb_topo__memo_put(buf, len, out);
    return 0;
}

/* The node description in buf (len bytes, NUL-terminated) read from path: the checks of
 * mb_topo_xml_check, hwloc's parse, then the walk described at the top of this file. */
static int mb_topo__parse(const char *path, const char *buf, size_t len, struct mb_node_topo *out,
                          struct mb_err *err)
{
    hwloc_topology_t t;
    hwloc_obj_t o = NULL;
    struct mb_topo__scan s;
    struct mb_node_topo r;
    int i;

    if (mb_topo_xml_check(buf, len, path, err))
        return -1;

    memset(&s, 0, sizeof s);
    memset(&r, 0, sizeof r);

    if (hwloc_topology_init(&t) < 0)
        return mb_err_set(err, path, 0, 0, "hwloc cannot initialise a topology");
    int rc = mb_topo__hwloc_load(t, path, buf, len, err);
    if (rc) {
        hwloc_topology_destroy(t);
        return -1;
    }

    r.n_numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    if (r.n_numa < 0)
        r.n_numa = 0;

    while ((o = hwloc_get_next_pcidev(t, o)) != NULL) {
        if (o->subtype && strcmp(o->subtype, "NVSwitch") == 0)
            r.n_nvswitch++;
        if (!mb_topo__is_gpu_pci(o))
            continue;
        if (s.n_gpu == MB_TOPO_MAX_GPUS) {
            s.too_many_gpus = 1;
            break;
        }
        s.gpu[s.n_gpu++] = o;
        mb_topo__gpu_details(o, &r);
    }
    /* CPU model of the first socket (Package info CPUModel), for the inter-socket rate */
    {
        hwloc_obj_t pk = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, NULL);
        if (pk)
            mb_topo__info(pk, "CPUModel", r.cpu_model, sizeof r.cpu_model);
    }
    /* No GPUModel anywhere: the PCIDevice name hwloc writes when it has pci.ids. */
    for (i = 0; i < s.n_gpu && !r.gpu_model[0]; i++)
        mb_topo__info(s.gpu[i], "PCIDevice", r.gpu_model, sizeof r.gpu_model);
    mb_topo__find_nics(t, &s);

    if (s.too_many_gpus || s.too_many_nics) {
        hwloc_topology_destroy(t);
        return mb_err_set(err, path, 0, 0, "more than %d %s in one node description",
                          s.too_many_gpus ? MB_TOPO_MAX_GPUS : MB_TOPO_MAX_NICS,
                          s.too_many_gpus ? "GPUs" : "NICs");
    }
    if (s.n_gpu == 0) {
        hwloc_topology_destroy(t);
        return mb_err_set(err, path, 0, 0,
                          "no GPU found (no PCI device of class 0302/0300 with vendor 10de)");
    }
    char other[64];
    if (r.gpu_model[0] && mb_topo__mixed_model(&s, r.gpu_model, other, sizeof other)) {
        hwloc_topology_destroy(t);
        return mb_err_set(err, path, 0, 0,
                          "GPUs of two models in one node ('%s' and '%s'): mbsim simulates one GPU type per node",
                          r.gpu_model, other);
    }

    r.n_gpus = s.n_gpu;
    r.n_nics = s.n_nic;
    for (i = 0; i < MB_TOPO_MAX_GPUS; i++) {
        r.gpu_numa[i] = -1;
        r.gpu_nic[i] = -1;
    }
    for (i = 0; i < s.n_gpu; i++) {
        r.gpu_numa[i] = mb_topo__numa_of(t, s.gpu[i]);
        r.gpu_nic[i] = mb_topo__nearest_nic(t, &s, s.gpu[i], r.gpu_numa[i]);
    }
    for (i = 0; i < MB_TOPO_MAX_NICS; i++)
        r.nic_numa[i] = -1;
    mb_topo__rails(t, &s, &r);
    mb_topo__nvlink_bw(t, &s, &r);
    if (r.n_islands == 0)
        for (i = 0; i < MB_TOPO_MAX_GPUS; i++)
            r.gpu_island[i] = -1;

    hwloc_topology_destroy(t);
    *out = r;
    return 0;
}
