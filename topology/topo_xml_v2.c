/*
 * topo_xml_v2.c -- the content check of a version 2.x hwloc XML file. See
 * topo_xml_v2.h.
 *
 * hwloc 2.9's XML import (topology-xml.c) trusts what lstopo writes: it
 * compares complete_cpusets without checking that a 2.x object has one (an
 * object with a cpuset but no complete_cpuset segfaults in
 * hwloc_bitmap_compare_first), it returns without freeing the object when an
 * <info>, <page_type> or <userdata> inside it is malformed (a leak from
 * hwloc_alloc_setup_object), and its own comment says it does not check that
 * sets nest. This check refuses those files first, naming what lstopo writes.
 */
#include "topo_xml_v2.h"
#include "mb_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB_XML_SET_WORDS 512    /* 32-bit words per set: 16384 PUs or NUMA nodes */
#define MB_XML_MAX_OBJ_DEPTH 64 /* nested objects; lstopo writes about 12 */
#define MB_XML_V2_DEPTH 256     /* elements, as topo_xml.c's scanner */

/* line and column (1-based) of q in the buffer */
void mb_xml_pos(const char *s, const char *q, int *line, int *col)
{
    int pend = 0;
    *line = 1;
    *col = 1;
    for (const char *r = s; r < q; r++)
        mb_text_pos_step((unsigned char)*r, line, col, &pend); /* columns count characters */
}

enum mb_xml_el {
    EL_UNKNOWN,
    EL_TOPOLOGY,
    EL_OBJECT,
    EL_PAGE_TYPE,
    EL_INFO,
    EL_USERDATA,
    EL_DIST,
    EL_DISTH,
    EL_INDEXES,
    EL_U64,
    EL_SUPPORT,
    EL_MEMATTR,
    EL_MEMATTR_VALUE,
    EL_CPUKIND,
    EL_N
};

/* hwloc2.dtd (hwloc 2.9): parents, attributes, required attributes, text. */
static const struct mb_xml_schema {
    const char *name;
    const char *parents;  /* space-separated */
    const char *attrs;    /* space-separated; NULL: any (hwloc ignores unknown object attributes) */
    const char *required; /* space-separated */
    int text;
} mb_xml_schema[EL_N] = {
    [EL_TOPOLOGY] = {"topology", "", "version", "", 0},
    [EL_OBJECT] = {"object", "topology object", NULL, "type gp_index", 0},
    [EL_PAGE_TYPE] = {"page_type", "object", "size count", "size count", 0},
    [EL_INFO] = {"info", "object cpukind", "name value", "name value", 0},
    [EL_USERDATA] = {"userdata", "object", "name length encoding", "", 1},
    [EL_DIST] = {"distances2", "topology", "type nbobjs indexing kind name", "type nbobjs indexing kind", 0},
    [EL_DISTH] = {"distances2hetero", "topology", "nbobjs kind name", "nbobjs kind", 0},
    [EL_INDEXES] = {"indexes", "distances2 distances2hetero", "length", "length", 1},
    [EL_U64] = {"u64values", "distances2 distances2hetero", "length", "length", 1},
    [EL_SUPPORT] = {"support", "topology", "name value", "name", 0},
    [EL_MEMATTR] = {"memattr", "topology", "name flags", "name flags", 0},
    [EL_MEMATTR_VALUE] = {"memattr_value", "memattr",
                          "target_obj_gp_index target_obj_type value initiator_cpuset initiator_obj_gp_index "
                          "initiator_obj_type",
                          "target_obj_type value", 0},
    [EL_CPUKIND] = {"cpukind", "topology", "cpuset forced_efficiency", "cpuset", 0},
};

enum mb_xml_cls { CLS_NORMAL = 1, CLS_MEMORY, CLS_IO, CLS_MISC };

/* The object types of hwloc2.dtd and their kind (hwloc.h: normal, memory, I/O, Misc). */
static const struct {
    const char *name;
    int cls;
} mb_xml_types[] = {
    {"Machine", CLS_NORMAL},  {"Package", CLS_NORMAL},  {"Die", CLS_NORMAL},      {"Core", CLS_NORMAL},
    {"PU", CLS_NORMAL},       {"Group", CLS_NORMAL},    {"L1Cache", CLS_NORMAL},  {"L2Cache", CLS_NORMAL},
    {"L3Cache", CLS_NORMAL},  {"L4Cache", CLS_NORMAL},  {"L5Cache", CLS_NORMAL},  {"L1iCache", CLS_NORMAL},
    {"L2iCache", CLS_NORMAL}, {"L3iCache", CLS_NORMAL}, {"NUMANode", CLS_MEMORY}, {"MemCache", CLS_MEMORY},
    {"Bridge", CLS_IO},       {"PCIDev", CLS_IO},       {"OSDev", CLS_IO},        {"Misc", CLS_MISC},
};

static const char *const mb_xml_cls_name[] = {"", "normal", "memory", "I/O", "Misc"};

/* A cpuset or nodeset: words[0] holds bits 0-31; beyond nw, all ones when inf. */
struct mb_xml_bits {
    uint32_t w[MB_XML_SET_WORDS];
    size_t nw;
    int inf;
};

struct mb_xml_obj {
    int cls;
    const char *type;
    size_t type_len;
    int has_sets;
    struct mb_xml_bits ccpu, cnode;       /* complete_cpuset, complete_nodeset */
    struct mb_xml_bits kid_cpu, kid_node; /* union over normal / memory children */
};

struct mb_xml_frame {
    int el;
    int saw_object;      /* an <object> child was seen */
    const char *at;      /* the element's name in the buffer (positions of its end checks) */
    uint64_t got;        /* <u64values>: the values read */
    uint64_t nb, n_u64;  /* <distances2*>: nbobjs= and the u64values its children held */
};

struct mb_xml_gp {
    uint64_t gp;
    const char *at;
};

struct mb_xml_v2 {
    const char *s, *path;
    struct mb_err *err;
    struct mb_xml_frame f[MB_XML_V2_DEPTH];
    int depth;
    struct mb_xml_obj obj[MB_XML_MAX_OBJ_DEPTH];
    int nobj; /* open objects */
    size_t n_objects;
    struct mb_xml_gp *gps;
    size_t n_gps, cap_gps;
    struct mb_xml_bits cpu, node; /* scratch: cpuset, nodeset */
    const char *last_text;        /* the last text character seen (a value continues at last_text + 1) */
    int digits;                   /* digits of the <u64values> value being read */
};

static int mb_xml_v2__err(struct mb_xml_v2 *v, const char *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int mb_xml_v2__err(struct mb_xml_v2 *v, const char *at, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    mb_xml_pos(v->s, at, &line, &col);
    return mb_err_set(v->err, v->path, line, col, "hwloc XML: %s", msg);
}

/* Is the n-byte word w in the space-separated list? */
static int mb_xml__in_list(const char *list, const char *w, size_t n)
{
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, " ");
        if (k == n && !memcmp(p, w, n))
            return 1;
        p += k;
        p += *p == ' ';
    }
    return 0;
}

static const struct mb_xml_attr *mb_xml__find(const struct mb_xml_attr *a, int na, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < na; i++)
        if (a[i].name_len == n && !memcmp(a[i].name, name, n))
            return &a[i];
    return NULL;
}

int mb_xml_v2_version(const struct mb_xml_attr *a, int na)
{
    const struct mb_xml_attr *ver = mb_xml__find(a, na, "version");
    if (!ver || !ver->val_len)
        return 1;
    int major = 0;
    for (size_t i = 0; i < ver->val_len && ver->val[i] >= '0' && ver->val[i] <= '9' && major < 1000; i++)
        major = major * 10 + (ver->val[i] - '0');
    return major;
}

/* A decimal without sign, at most 19 digits (hwloc reads them with strtoul). */
static int mb_xml__decimal(const struct mb_xml_attr *at, uint64_t *out)
{
    uint64_t x = 0;
    if (!at->val_len || at->val_len > 19)
        return -1;
    for (size_t i = 0; i < at->val_len; i++) {
        if (at->val[i] < '0' || at->val[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(at->val[i] - '0');
    }
    *out = x;
    return 0;
}

static int mb_xml__hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
}

/*
 * An hwloc bitmap as lstopo writes it (hwloc_bitmap_asprintf): comma-separated
 * 32-bit words, most significant first, each "0x" and 1-8 hex digits or empty
 * (zero) between two commas, optionally after an infinite "0xf...f" prefix.
 * 0, -1 on bad syntax, -2 when wider than MB_XML_SET_WORDS words.
 */
static int mb_xml__bits(const char *v, size_t n, struct mb_xml_bits *b)
{
    memset(b, 0, sizeof *b);
    const char *p = v, *end = v + n;
    if (n >= 7 && !memcmp(v, "0xf...f", 7)) {
        b->inf = 1;
        p += 7;
        if (p == end)
            return 0;
        if (*p != ',')
            return -1;
        p++;
    }
    size_t fields = 1;
    for (const char *q = p; q < end; q++)
        fields += *q == ',';
    if (fields > MB_XML_SET_WORDS)
        return -2;
    b->nw = fields;
    for (size_t idx = fields; idx-- > 0;) {
        const char *q = p;
        while (q < end && *q != ',')
            q++;
        size_t len = (size_t)(q - p);
        if (!len && (idx == fields - 1 || idx == 0))
            return -1; /* first and last words are written */
        if (len) {
            if (len < 3 || len > 10 || p[0] != '0' || p[1] != 'x')
                return -1;
            uint32_t w = 0;
            for (const char *r = p + 2; r < q; r++) {
                int d = mb_xml__hex(*r);
                if (d < 0)
                    return -1;
                w = w << 4 | (uint32_t)d;
            }
            b->w[idx] = w;
        }
        p = q + 1;
    }
    return 0;
}

static uint32_t mb_xml__word(const struct mb_xml_bits *b, size_t i)
{
    return i < b->nw ? b->w[i] : b->inf ? 0xffffffffu : 0;
}

static size_t mb_xml__max(size_t a, size_t b)
{
    return a > b ? a : b;
}

static int mb_xml__subset(const struct mb_xml_bits *a, const struct mb_xml_bits *b)
{
    for (size_t i = 0, n = mb_xml__max(a->nw, b->nw); i < n; i++)
        if (mb_xml__word(a, i) & ~mb_xml__word(b, i))
            return 0;
    return !a->inf || b->inf;
}

static int mb_xml__disjoint(const struct mb_xml_bits *a, const struct mb_xml_bits *b)
{
    for (size_t i = 0, n = mb_xml__max(a->nw, b->nw); i < n; i++)
        if (mb_xml__word(a, i) & mb_xml__word(b, i))
            return 0;
    return !(a->inf && b->inf);
}

static void mb_xml__union(struct mb_xml_bits *a, const struct mb_xml_bits *b)
{
    size_t n = mb_xml__max(a->nw, b->nw);
    for (size_t i = 0; i < n; i++)
        a->w[i] = mb_xml__word(a, i) | mb_xml__word(b, i);
    a->nw = n;
    a->inf |= b->inf;
}

/* Parse the bitmap attribute at (when present) into b; -1 with err set when it is not one. */
static int mb_xml__set(struct mb_xml_v2 *v, const struct mb_xml_attr *at, struct mb_xml_bits *b)
{
    int rc = mb_xml__bits(at->val, at->val_len, b);
    if (rc == -2)
        return mb_xml_v2__err(v, at->name, "%.*s= wider than %d bits", (int)at->name_len, at->name,
                              MB_XML_SET_WORDS * 32);
    if (rc)
        return mb_xml_v2__err(v, at->name,
                              "%.*s=\"%.*s\" is not an hwloc bitmap (expected comma-separated words "
                              "0xXXXXXXXX, as lstopo writes)",
                              (int)at->name_len, at->name, at->val_len > 40 ? 40 : (int)at->val_len, at->val);
    return 0;
}

struct mb_xml_v2 *mb_xml_v2_new(const char *s, const char *path, struct mb_err *err)
{
    struct mb_xml_v2 *v = mb_calloc(1, sizeof *v);
    v->s = s;
    v->path = path;
    v->err = err;
    return v;
}

void mb_xml_v2_free(struct mb_xml_v2 *v)
{
    if (!v)
        return;
    mb_free(v->gps);
    mb_free(v);
}

/* "<a> or <b>" for a parents list */
static void mb_xml__parents(const char *list, char *out, size_t cap)
{
    out[0] = 0;
    size_t len = 0;
    for (const char *p = list; *p && len < cap;) {
        size_t k = strcspn(p, " ");
        len += (size_t)snprintf(out + len, cap - len, "%s<%.*s>", len ? " or " : "", (int)k, p);
        p += k;
        p += *p == ' ';
    }
}

static int mb_xml__object(struct mb_xml_v2 *v, const char *name, const struct mb_xml_attr *a, int na)
{
    const struct mb_xml_attr *type = mb_xml__find(a, na, "type");
    int cls = 0;
    for (size_t i = 0; i < sizeof mb_xml_types / sizeof mb_xml_types[0] && !cls; i++)
        if (strlen(mb_xml_types[i].name) == type->val_len && !memcmp(mb_xml_types[i].name, type->val, type->val_len))
            cls = mb_xml_types[i].cls;
    int tl = type->val_len > 40 ? 40 : (int)type->val_len;
    if (!cls)
        return mb_xml_v2__err(v, type->name,
                              "unknown object type \"%.*s\" (expected one of hwloc2.dtd's: Machine, Package, Die, "
                              "Core, PU, Group, L1Cache-L5Cache, L1iCache-L3iCache, NUMANode, MemCache, Bridge, "
                              "PCIDev, OSDev, Misc)",
                              tl, type->val);
    struct mb_xml_obj *parent = v->nobj ? &v->obj[v->nobj - 1] : NULL;
    if (!parent && (type->val_len != 7 || memcmp(type->val, "Machine", 7)))
        return mb_xml_v2__err(v, name, "root object of type \"%.*s\" (expected a Machine, as lstopo writes)", tl,
                              type->val);
    if (parent) {
        int pc = parent->cls;
        int ok = cls == CLS_MISC || (cls == CLS_NORMAL && pc == CLS_NORMAL) ||
                 (cls == CLS_MEMORY && (pc == CLS_NORMAL || pc == CLS_MEMORY)) ||
                 (cls == CLS_IO && (pc == CLS_NORMAL || pc == CLS_IO));
        if (!ok)
            return mb_xml_v2__err(v, name, "%s object \"%.*s\" inside %s object \"%.*s\" (hwloc 2 puts %s objects under %s)",
                                  mb_xml_cls_name[cls], tl, type->val, mb_xml_cls_name[pc], (int)parent->type_len,
                                  parent->type, mb_xml_cls_name[cls],
                                  cls == CLS_NORMAL   ? "normal ones only"
                                  : cls == CLS_MEMORY ? "normal or memory ones"
                                                      : "normal or I/O ones");
    }
    if (v->nobj == MB_XML_MAX_OBJ_DEPTH)
        return mb_xml_v2__err(v, name, "objects nested deeper than %d", MB_XML_MAX_OBJ_DEPTH);

    /* gp_index: present (schema), a positive decimal, unique (checked at the end) */
    const struct mb_xml_attr *gp = mb_xml__find(a, na, "gp_index");
    uint64_t g = 0;
    if (mb_xml__decimal(gp, &g) || !g)
        return mb_xml_v2__err(v, gp->name, "gp_index=\"%.*s\" (expected a positive decimal, as lstopo writes)",
                              gp->val_len > 24 ? 24 : (int)gp->val_len, gp->val);
    if (v->n_gps == v->cap_gps) {
        v->cap_gps = v->cap_gps ? 2 * v->cap_gps : 256;
        v->gps = mb_realloc(v->gps, v->cap_gps * sizeof *v->gps);
    }
    v->gps[v->n_gps].gp = g;
    v->gps[v->n_gps++].at = gp->name;

    /* os_index of a PU or NUMANode: hwloc sets that bit of a bitmap, and takes 2^32-1 when it is
     * missing (a 512 MiB bitmap, and copies of it, from a 600-byte file); lstopo writes it on both,
     * below the sets' 16384 bits */
    if ((type->val_len == 2 && !memcmp(type->val, "PU", 2)) || (type->val_len == 8 && !memcmp(type->val, "NUMANode", 8))) {
        const struct mb_xml_attr *oi = mb_xml__find(a, na, "os_index");
        uint64_t x = 0;
        if (!oi)
            return mb_xml_v2__err(v, name, "%.*s object without os_index= (lstopo writes it on every PU and NUMANode)",
                                  tl, type->val);
        if (mb_xml__decimal(oi, &x) || x >= 32 * MB_XML_SET_WORDS)
            return mb_xml_v2__err(v, oi->name, "os_index=\"%.*s\" (expected a decimal below %d, the bits of a set)",
                                  oi->val_len > 24 ? 24 : (int)oi->val_len, oi->val, 32 * MB_XML_SET_WORDS);
    }

    struct mb_xml_obj *o = &v->obj[v->nobj];
    o->cls = cls;
    o->type = type->val;
    o->type_len = type->val_len;
    o->has_sets = cls == CLS_NORMAL || cls == CLS_MEMORY;
    memset(&o->kid_cpu, 0, sizeof o->kid_cpu);
    memset(&o->kid_node, 0, sizeof o->kid_node);

    static const char *const sets[] = {"cpuset", "complete_cpuset", "nodeset", "complete_nodeset"};
    const struct mb_xml_attr *sa[4];
    for (int i = 0; i < 4; i++) {
        sa[i] = mb_xml__find(a, na, sets[i]);
        if (o->has_sets && !sa[i])
            return mb_xml_v2__err(v, name,
                                  "%s object \"%.*s\" without %s= (lstopo 2 writes cpuset, complete_cpuset, "
                                  "nodeset and complete_nodeset on every normal and memory object)",
                                  mb_xml_cls_name[cls], tl, type->val, sets[i]);
        if (!o->has_sets && sa[i])
            return mb_xml_v2__err(v, sa[i]->name,
                                  "%s object \"%.*s\" with %s= (lstopo 2 writes sets only on normal and memory objects)",
                                  mb_xml_cls_name[cls], tl, type->val, sets[i]);
    }
    static const char *const allowed[] = {"allowed_cpuset", "allowed_nodeset"};
    for (int i = 0; i < 2; i++) {
        const struct mb_xml_attr *al = mb_xml__find(a, na, allowed[i]);
        if (al && mb_xml__set(v, al, &v->cpu))
            return -1;
    }
    if (o->has_sets) {
        if (mb_xml__set(v, sa[0], &v->cpu) || mb_xml__set(v, sa[1], &o->ccpu) || mb_xml__set(v, sa[2], &v->node) ||
            mb_xml__set(v, sa[3], &o->cnode))
            return -1;
        if (!mb_xml__subset(&v->cpu, &o->ccpu))
            return mb_xml_v2__err(v, sa[0]->name, "cpuset= is not inside complete_cpuset= (expected a subset)");
        if (!mb_xml__subset(&v->node, &o->cnode))
            return mb_xml_v2__err(v, sa[2]->name, "nodeset= is not inside complete_nodeset= (expected a subset)");
        if (parent) {
            int pl = (int)parent->type_len;
            if (!mb_xml__subset(&o->ccpu, &parent->ccpu))
                return mb_xml_v2__err(v, sa[1]->name,
                                      "complete_cpuset= of \"%.*s\" is not inside its parent \"%.*s\"'s "
                                      "(expected a child's sets inside its parent's)",
                                      tl, type->val, pl, parent->type);
            if (!mb_xml__subset(&o->cnode, &parent->cnode))
                return mb_xml_v2__err(v, sa[3]->name,
                                      "complete_nodeset= of \"%.*s\" is not inside its parent \"%.*s\"'s "
                                      "(expected a child's sets inside its parent's)",
                                      tl, type->val, pl, parent->type);
            if (cls == CLS_NORMAL) {
                if (!mb_xml__disjoint(&o->ccpu, &parent->kid_cpu))
                    return mb_xml_v2__err(v, sa[1]->name,
                                          "complete_cpuset= of \"%.*s\" overlaps a sibling's (expected the normal "
                                          "children of one object to have disjoint cpusets)",
                                          tl, type->val);
                mb_xml__union(&parent->kid_cpu, &o->ccpu);
            } else {
                if (!mb_xml__disjoint(&o->cnode, &parent->kid_node))
                    return mb_xml_v2__err(v, sa[3]->name,
                                          "complete_nodeset= of \"%.*s\" overlaps a sibling's (expected the memory "
                                          "children of one object to have disjoint nodesets)",
                                          tl, type->val);
                mb_xml__union(&parent->kid_node, &o->cnode);
            }
        }
    }
    v->nobj++;
    v->n_objects++;
    return 0;
}

/* A PCI bus id as lstopo writes it: 1-8 hex digits of domain, then :bb:dd.f (hex). */
static int mb_xml__busid(const char *p, size_t n)
{
    size_t i = 0, d = 0;
    while (i < n && d < 9 && mb_xml__hex(p[i]) >= 0)
        i++, d++;
    if (d < 1 || d > 8 || n - i != 8)
        return 0;
    static const char shape[] = ":xx:xx.x";
    for (size_t k = 0; k < 8; k++)
        if (shape[k] == 'x' ? mb_xml__hex(p[i + k]) < 0 : p[i + k] != shape[k])
            return 0;
    return 1;
}

/* Values mbsim reads from the file: the GPU memory (hwloc's CUDAGlobalMemorySize
 * info, KiB) and a PCI link's speed (pci_link_speed=, GB/s; 0 = unknown, as
 * hwloc writes it), checked here so a bad one is an error at its position
 * instead of a silent wrong number (1 PiB and 1000 GB/s are sanity bounds). */
static int mb_xml__values(struct mb_xml_v2 *v, int el, const struct mb_xml_attr *a, int na)
{
    const struct mb_xml_attr *nm = el == EL_INFO ? mb_xml__find(a, na, "name") : NULL;
    if (nm && nm->val_len == 20 && !memcmp(nm->val, "CUDAGlobalMemorySize", 20)) {
        const struct mb_xml_attr *val = mb_xml__find(a, na, "value");
        uint64_t k = 0;
        if (mb_xml__decimal(val, &k) || k < 1 || k > (1ull << 40))
            return mb_xml_v2__err(v, val->val,
                                  "CUDAGlobalMemorySize \"%.*s\" (expected the GPU's memory in KiB, a decimal from "
                                  "1 to 2^40)",
                                  val->val_len > 24 ? 24 : (int)val->val_len, val->val);
    }
    const struct mb_xml_attr *bus = el == EL_OBJECT ? mb_xml__find(a, na, "pci_busid") : NULL;
    if (bus && !mb_xml__busid(bus->val, bus->val_len))
        return mb_xml_v2__err(v, bus->val,
                              "pci_busid=\"%.*s\" (expected domain:bus:device.function in hex, as lstopo writes, "
                              "e.g. 0000:2b:00.0; hwloc drops a device it cannot read, and with it a GPU)",
                              bus->val_len > 24 ? 24 : (int)bus->val_len, bus->val);
    const struct mb_xml_attr *sp = el == EL_OBJECT ? mb_xml__find(a, na, "pci_link_speed") : NULL;
    if (sp) {
        char buf[32], *end;
        snprintf(buf, sizeof buf, "%.*s", sp->val_len > 31 ? 31 : (int)sp->val_len, sp->val);
        double x = strtod(buf, &end);
        if (end == buf || *end || sp->val_len > 31 || !isfinite(x) || x < 0 || x > 1000)
            return mb_xml_v2__err(v, sp->val, "pci_link_speed=\"%s\" (expected GB/s from 0 to 1000, as lstopo writes)",
                                  buf);
    }
    return 0;
}

int mb_xml_v2_start(struct mb_xml_v2 *v, const char *name, size_t n, const struct mb_xml_attr *a, int na)
{
    int el = EL_UNKNOWN;
    for (int i = 1; i < EL_N && !el; i++)
        if (strlen(mb_xml_schema[i].name) == n && !memcmp(mb_xml_schema[i].name, name, n))
            el = i;
    int nl = n > 40 ? 40 : (int)n;
    if (!el)
        return mb_xml_v2__err(v, name,
                              "unknown element <%.*s> (hwloc2.dtd has topology, object, page_type, info, "
                              "distances2, distances2hetero, indexes, u64values, support, memattr, memattr_value, "
                              "cpukind)",
                              nl, name);
    if (el == EL_USERDATA)
        return mb_xml_v2__err(v, name,
                              "<userdata> refused (application data: mbsim reads none, and hwloc 2.9 leaks the "
                              "object when one is malformed)");
    const struct mb_xml_schema *sc = &mb_xml_schema[el];
    struct mb_xml_frame *pf = v->depth ? &v->f[v->depth - 1] : NULL;
    if (pf && !mb_xml__in_list(sc->parents, mb_xml_schema[pf->el].name, strlen(mb_xml_schema[pf->el].name))) {
        char where[128] = "no element: it is the root";
        if (sc->parents[0])
            mb_xml__parents(sc->parents, where, sizeof where);
        return mb_xml_v2__err(v, name, "<%s> inside <%s> (expected it inside %s)", sc->name,
                              mb_xml_schema[pf->el].name, where);
    }
    for (int i = 0; i < na; i++) {
        int al = a[i].name_len > 40 ? 40 : (int)a[i].name_len;
        if (sc->attrs && !mb_xml__in_list(sc->attrs, a[i].name, a[i].name_len))
            return mb_xml_v2__err(v, a[i].name, "unknown attribute %.*s= on <%s> (hwloc2.dtd allows: %s)", al,
                                  a[i].name, sc->name, sc->attrs);
    }
    for (const char *p = sc->required; *p;) {
        size_t k = strcspn(p, " ");
        char req[32];
        snprintf(req, sizeof req, "%.*s", (int)k, p);
        if (!mb_xml__find(a, na, req))
            return mb_xml_v2__err(v, name, "<%s> without %s= (hwloc2.dtd requires it)", sc->name, req);
        p += k;
        p += *p == ' ';
    }

    if (pf && pf->el == EL_TOPOLOGY) {
        if (el == EL_OBJECT && pf->saw_object)
            return mb_xml_v2__err(v, name, "a second root <object> (expected one root object in <topology>)");
        if (el != EL_OBJECT && !pf->saw_object)
            return mb_xml_v2__err(v, name, "<%s> before the root <object>", sc->name);
    }
    if (pf && pf->el == EL_OBJECT && el != EL_OBJECT && pf->saw_object)
        return mb_xml_v2__err(v, name,
                              "<%s> after a child <object> (hwloc reads page_type and info before the child objects, "
                              "as lstopo writes them)",
                              sc->name);
    if (el == EL_PAGE_TYPE) {
        const struct mb_xml_obj *o = &v->obj[v->nobj - 1];
        if (v->nobj > 1 && (o->type_len != 8 || memcmp(o->type, "NUMANode", 8)))
            return mb_xml_v2__err(v, name,
                                  "<page_type> inside object \"%.*s\" (hwloc takes page_type only in a NUMANode or "
                                  "the root object)",
                                  (int)o->type_len, o->type);
    }
    if (el == EL_DIST || el == EL_DISTH) {
        const struct mb_xml_attr *nb = mb_xml__find(a, na, "nbobjs");
        uint64_t k = 0;
        if (mb_xml__decimal(nb, &k) || !k || k > v->n_objects)
            return mb_xml_v2__err(v, nb->name,
                                  "<%s nbobjs=\"%.*s\"> (expected between 1 and the %zu objects in the file)",
                                  sc->name, nb->val_len > 24 ? 24 : (int)nb->val_len, nb->val, v->n_objects);
    }
    if (el == EL_INDEXES || el == EL_U64) {
        const struct mb_xml_attr *len = mb_xml__find(a, na, "length");
        uint64_t k = 0;
        if (mb_xml__decimal(len, &k))
            return mb_xml_v2__err(v, len->name, "<%s length=\"%.*s\"> (expected a decimal)", sc->name,
                                  len->val_len > 24 ? 24 : (int)len->val_len, len->val);
    }
    if (el == EL_CPUKIND || el == EL_MEMATTR_VALUE) {
        const struct mb_xml_attr *cs = mb_xml__find(a, na, el == EL_CPUKIND ? "cpuset" : "initiator_cpuset");
        if (cs && mb_xml__set(v, cs, &v->cpu))
            return -1;
    }
    if (el == EL_MEMATTR_VALUE) {
        static const char *const gps[] = {"target_obj_gp_index", "initiator_obj_gp_index"};
        for (int i = 0; i < 2; i++) {
            const struct mb_xml_attr *g = mb_xml__find(a, na, gps[i]);
            uint64_t k = 0;
            if (g && mb_xml__decimal(g, &k))
                return mb_xml_v2__err(v, g->name, "%s=\"%.*s\" (expected a decimal gp_index)", gps[i],
                                      g->val_len > 24 ? 24 : (int)g->val_len, g->val);
        }
    }
    if (el == EL_OBJECT && mb_xml__object(v, name, a, na))
        return -1;
    if (mb_xml__values(v, el, a, na))
        return -1;
    if (pf)
        pf->saw_object |= el == EL_OBJECT;
    if (v->depth == MB_XML_V2_DEPTH)
        return mb_xml_v2__err(v, name, "elements nested too deep");
    struct mb_xml_frame *nf = &v->f[v->depth++];
    memset(nf, 0, sizeof *nf);
    nf->el = el;
    nf->at = name;
    if (el == EL_DIST || el == EL_DISTH)
        mb_xml__decimal(mb_xml__find(a, na, "nbobjs"), &nf->nb);
    return 0;
}

/* The end of a distance matrix or of one of its value lists: hwloc refuses
 * (with no position) a matrix whose values are not nbobjs^2 (hwloc
 * topology-xml.c, hwloc__xml_import_distances; length= counts characters). */
static int mb_xml__end_counts(struct mb_xml_v2 *v, const struct mb_xml_frame *f)
{
    const char *nm = mb_xml_schema[f->el].name;
    if (f->el == EL_U64 && v->depth)
        v->f[v->depth - 1].n_u64 += f->got;
    if ((f->el == EL_DIST || f->el == EL_DISTH) && f->n_u64 != f->nb * f->nb)
        return mb_xml_v2__err(v, f->at, "<%s nbobjs=\"%llu\"> holds %llu values (expected nbobjs^2 = %llu)", nm,
                              (unsigned long long)f->nb, (unsigned long long)f->n_u64,
                              (unsigned long long)(f->nb * f->nb));
    return 0;
}

int mb_xml_v2_end(struct mb_xml_v2 *v)
{
    if (!v->depth)
        return 0;
    struct mb_xml_frame f = v->f[--v->depth];
    if (f.el == EL_OBJECT && v->nobj)
        v->nobj--;
    return mb_xml__end_counts(v, &f);
}

/* One character of a <u64values> list: unsigned decimals of at most 19 digits
 * (below 2^64, as hwloc's strtoull needs); a value continues while characters
 * are adjacent. */
static int mb_xml__u64_char(struct mb_xml_v2 *v, struct mb_xml_frame *f, const char *at)
{
    int cont = v->last_text && at == v->last_text + 1;
    v->last_text = at;
    f->got += !cont;
    if (*at < '0' || *at > '9')
        return mb_xml_v2__err(v, at, "'%c' in <u64values> (expected unsigned decimal integers)", *at);
    v->digits = cont ? v->digits + 1 : 1;
    if (v->digits > 19)
        return mb_xml_v2__err(v, at, "a value of more than 19 digits in <u64values> (expected at most 19, below "
                                     "2^64 as hwloc reads them)");
    return 0;
}

int mb_xml_v2_text(struct mb_xml_v2 *v, const char *at)
{
    if (!v->depth)
        return 0;
    struct mb_xml_frame *f = &v->f[v->depth - 1];
    if (f->el == EL_U64)
        return mb_xml__u64_char(v, f, at);
    if (mb_xml_schema[f->el].text)
        return 0;
    return mb_xml_v2__err(v, at, "text inside <%s> (expected only child elements)", mb_xml_schema[f->el].name);
}

static int mb_xml__gp_cmp(const void *pa, const void *pb)
{
    const struct mb_xml_gp *a = pa, *b = pb;
    if (a->gp != b->gp)
        return a->gp < b->gp ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

int mb_xml_v2_finish(struct mb_xml_v2 *v)
{
    if (!v->n_gps)
        return 0;
    qsort(v->gps, v->n_gps, sizeof *v->gps, mb_xml__gp_cmp);
    const struct mb_xml_gp *dup = NULL, *first = NULL;
    for (size_t i = 1; i < v->n_gps; i++)
        if (v->gps[i].gp == v->gps[i - 1].gp && (!dup || v->gps[i].at < dup->at)) {
            dup = &v->gps[i];
            first = &v->gps[i - 1];
            while (first > v->gps && first[-1].gp == dup->gp)
                first--;
        }
    if (!dup)
        return 0;
    int line, col;
    mb_xml_pos(v->s, first->at, &line, &col);
    return mb_xml_v2__err(v, dup->at,
                          "gp_index=\"%llu\" given to a second object (first at line %d; expected every object's "
                          "gp_index to be its own, as lstopo writes)",
                          (unsigned long long)dup->gp, line);
}
