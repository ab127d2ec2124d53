/*
 * topo_xml.c -- a small XML well-formedness scanner for hwloc topology files.
 * See topo_xml.h.
 *
 * It accepts the subset lstopo writes: an optional <?xml ...?> declaration,
 * comments and processing instructions, a DOCTYPE that names an external DTD
 * (lstopo's `<!DOCTYPE topology SYSTEM "hwloc2.dtd">`) and elements with
 * quoted attributes. Everything else an XML parser would expand (internal
 * DTD subsets, entities, CDATA) is refused with its position.
 *
 * A version 2.x file is then held to what hwloc 2.9's own hwloc2.dtd and
 * lstopo 2.x's export say (topo_xml_v2.c): known elements in their places
 * with their attributes, and objects whose cpusets and nodesets form a tree.
 * hwloc 2.9's XML import trusts both: an object with a cpuset but no
 * complete_cpuset segfaults in hwloc_bitmap_compare_first, and every error
 * inside an object's <info>, <page_type> or <userdata> leaks the object.
 */
#include "topo_xml.h"

#include <hwloc.h>

#include <string.h>
#include <strings.h>

#include "topo_xml_v2.h"

#define MB_XML_MAX_DEPTH 256 /* lstopo files nest about 15 deep */

struct mb_xml {
    const char *s, *p, *end;
    const char *path;
    struct mb_err *err;
    const char *open[MB_XML_MAX_DEPTH]; /* names of the open elements */
    size_t open_len[MB_XML_MAX_DEPTH];
    int depth, roots;
    struct mb_xml_v2 *v2; /* the 2.x content check; NULL before <topology> (other versions are refused) */
};

/* An error at the scanner's position, counted in lines and columns (1-based). */
static int mb_xml__err(struct mb_xml *x, const char *what)
{
    int line, col;
    mb_xml_pos(x->s, x->p < x->end ? x->p : x->end, &line, &col);
    return mb_err_set(x->err, x->path, line, col, "hwloc XML: %s", what);
}

static int mb_xml__starts(const struct mb_xml *x, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(x->end - x->p) >= n && !memcmp(x->p, lit, n);
}

static int mb_xml__name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
}

static int mb_xml__at_bom(const struct mb_xml *x)
{
    return x->end - x->s >= 3 && !memcmp(x->s, "\xEF\xBB\xBF", 3);
}

static void mb_xml__space(struct mb_xml *x)
{
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r'))
        x->p++;
}

/* Skip past `lit`, or fail with `what` at the start. */
static int mb_xml__skip_to(struct mb_xml *x, const char *lit, const char *what)
{
    const char *q = x->p;
    size_t n = strlen(lit);
    for (; q + n <= x->end; q++)
        if (!memcmp(q, lit, n)) {
            x->p = q + n;
            return 0;
        }
    return mb_xml__err(x, what);
}

/* A reference after '&': &lt; &gt; &amp; &quot; &apos; or &#N; &#xH;. */
static int mb_xml__ref(struct mb_xml *x)
{
    static const char *const ok[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (mb_xml__starts(x, ok[i])) {
            x->p += strlen(ok[i]);
            return 0;
        }
    if (!mb_xml__starts(x, "&#"))
        return mb_xml__err(x, "entity reference refused (expected &lt; &gt; &amp; &quot; &apos; or &#N;)");
    const char *q = x->p + 2;
    int hex = q < x->end && *q == 'x';
    unsigned long v = 0;
    int digits = 0;
    for (q += hex; q < x->end && *q != ';' && digits < 8; q++, digits++) {
        int d = (*q >= '0' && *q <= '9') ? *q - '0'
                : hex && (*q | 32) >= 'a' && (*q | 32) <= 'f' ? (*q | 32) - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v * (hex ? 16 : 10) + (unsigned long)d;
    }
    if (!digits || q >= x->end || *q != ';' || v == 0 || v > 0x10FFFF)
        return mb_xml__err(x, "bad character reference (expected &#N; or &#xH; naming a character)");
    x->p = q + 1;
    return 0;
}

static size_t mb_xml__name(struct mb_xml *x)
{
    const char *q = x->p;
    if (q < x->end && mb_xml__name_char(*q, 1))
        for (q++; q < x->end && mb_xml__name_char(*q, 0); q++)
            ;
    size_t n = (size_t)(q - x->p);
    x->p = q;
    return n;
}

/* One name="value" attribute into *a; *is_type set when it is type=. */
static int mb_xml__attr(struct mb_xml *x, int *is_type, struct mb_xml_attr *a)
{
    const char *name = x->p;
    size_t n = mb_xml__name(x);
    if (!n)
        return mb_xml__err(x, "expected an attribute name, '>' or '/>'");
    *is_type = n == 4 && !memcmp(name, "type", 4);
    mb_xml__space(x);
    if (x->p >= x->end || *x->p != '=')
        return mb_xml__err(x, "expected '=' after the attribute name");
    x->p++;
    mb_xml__space(x);
    char q = x->p < x->end ? *x->p : 0;
    if (q != '"' && q != '\'')
        return mb_xml__err(x, "expected a quoted attribute value");
    a->name = name;
    a->name_len = n;
    a->val = x->p + 1;
    for (x->p++; x->p < x->end && *x->p != q;) {
        if (*x->p == '<')
            return mb_xml__err(x, "'<' inside an attribute value");
        if (*x->p == '&') {
            if (mb_xml__ref(x))
                return -1;
        } else {
            x->p++;
        }
    }
    if (x->p >= x->end)
        return mb_xml__err(x, "unterminated attribute value");
    a->val_len = (size_t)(x->p - a->val);
    if (*is_type && !a->val_len)
        *is_type = 0; /* type="" names no type */
    x->p++;
    return 0;
}

/* A file newer than 2.x: refused here, with the version it states. */
static int mb_xml__newer(struct mb_xml *x, const char *tag, const struct mb_xml_attr *a, int na)
{
    int line, col, vl = 0;
    const char *v = "";
    for (int i = 0; i < na; i++)
        if (a[i].name_len == 7 && !memcmp(a[i].name, "version", 7))
            v = a[i].val, vl = a[i].val_len > 16 ? 16 : (int)a[i].val_len;
    mb_xml_pos(x->s, tag, &line, &col);
    return mb_err_set(x->err, x->path, line, col,
                      "hwloc cannot load XML (topology version %.*s; mbsim reads version 2.x XML with hwloc %d.x: "
                      "export the topology with hwloc 2's lstopo --of xml)",
                      vl, v, HWLOC_API_VERSION >> 16);
}

/* A start tag after '<' (or an empty-element tag). */
static int mb_xml__start(struct mb_xml *x)
{
    const char *tag = x->p;
    const char *name = x->p;
    size_t n = mb_xml__name(x);
    if (!n)
        return mb_xml__err(x, "expected an element name after '<'");
    if (x->depth == 0 && (x->roots++ || n != 8 || memcmp(name, "topology", 8)))
        return x->p = tag, mb_xml__err(x, "expected one <topology> root element");
    struct mb_xml_attr a[MB_XML_MAX_ATTRS];
    int has_type = 0, attrs = 0;
    for (;;) {
        const char *before = x->p;
        mb_xml__space(x);
        if (mb_xml__starts(x, "/>") || mb_xml__starts(x, ">"))
            break;
        if (x->p == before)
            return mb_xml__err(x, "expected a space, '>' or '/>' in the tag");
        int is_type = 0;
        if (attrs == MB_XML_MAX_ATTRS)
            return mb_xml__err(x, "too many attributes in one element");
        if (mb_xml__attr(x, &is_type, &a[attrs]))
            return -1;
        for (int i = 0; i < attrs; i++)
            if (a[i].name_len == a[attrs].name_len && !memcmp(a[i].name, a[attrs].name, a[i].name_len))
                return x->p = a[attrs].name, mb_xml__err(x, "the same attribute twice in one element");
        attrs++;
        has_type |= is_type;
    }
    if (n == 6 && !memcmp(name, "object", 6) && !has_type)
        return x->p = tag, mb_xml__err(x, "<object> without a type= attribute");
    int empty = *x->p == '/';
    if (x->depth == 0) {
        /* the version decides which content check applies */
        int major = mb_xml_v2_version(a, attrs);
        if (major < 2)
            return x->p = tag, mb_xml__err(x, "version 1.x file refused (expected <topology version=\"2.x\">, "
                                              "as lstopo 2 writes: export the topology again with hwloc 2)");
        if (major > 2) /* hwloc 2.9 takes some (version="3", "20") without its checks and leaks */
            return mb_xml__newer(x, tag, a, attrs);
        x->v2 = mb_xml_v2_new(x->s, x->path, x->err);
    }
    if (x->v2 && mb_xml_v2_start(x->v2, tag, n, a, attrs))
        return -1;
    if (empty) {
        x->p += 2;
        return x->v2 ? mb_xml_v2_end(x->v2) : 0;
    }
    x->p++;
    if (x->depth == MB_XML_MAX_DEPTH)
        return x->p = tag, mb_xml__err(x, "elements nested too deep");
    x->open[x->depth] = name;
    x->open_len[x->depth++] = n;
    return 0;
}

static int mb_xml__end(struct mb_xml *x)
{
    const char *name = x->p;
    size_t n = mb_xml__name(x);
    if (!x->depth || n != x->open_len[x->depth - 1] || memcmp(name, x->open[x->depth - 1], n))
        return x->p = name, mb_xml__err(x, "end tag does not match the open element");
    mb_xml__space(x);
    if (x->p >= x->end || *x->p != '>')
        return mb_xml__err(x, "expected '>' to close the end tag");
    x->p++;
    x->depth--;
    return x->v2 ? mb_xml_v2_end(x->v2) : 0;
}

/* <!DOCTYPE name SYSTEM "uri"> or PUBLIC "id" "uri"; no internal subset. */
static int mb_xml__doctype(struct mb_xml *x)
{
    if (x->roots)
        return mb_xml__err(x, "DOCTYPE after the root element");
    for (x->p += 9; x->p < x->end && *x->p != '>'; x->p++) {
        if (*x->p == '[')
            return mb_xml__err(x, "DOCTYPE with an internal subset refused (entity declarations are not accepted)");
        if (*x->p == '"' || *x->p == '\'') {
            const char *c = memchr(x->p + 1, *x->p, (size_t)(x->end - x->p - 1));
            if (!c)
                return mb_xml__err(x, "unterminated string in DOCTYPE");
            x->p = c;
        }
    }
    if (x->p >= x->end)
        return mb_xml__err(x, "unterminated DOCTYPE");
    x->p++;
    return 0;
}

/* A processing instruction after '<'. The XML declaration <?xml ...?> must come
 * first and say what lstopo writes (version 1.x, encoding UTF-8): libxml2 leaks
 * when it refuses an encoding, and hwloc 2.9 then fails the load anyway. */
static int mb_xml__pi(struct mb_xml *x)
{
    const char *lt = x->p;
    x->p += 2;
    const char *t = x->p;
    size_t n = mb_xml__name(x);
    if (n != 3 || (t[0] | 32) != 'x' || (t[1] | 32) != 'm' || (t[2] | 32) != 'l')
        return mb_xml__skip_to(x, "?>", "unterminated processing instruction");
    const char *start = x->s + (mb_xml__at_bom(x) ? 3 : 0);
    if (lt != start || memcmp(t, "xml", 3))
        return x->p = lt, mb_xml__err(x, "XML declaration not at the start of the file (expected <?xml only there)");
    for (;;) {
        const char *before = x->p;
        mb_xml__space(x);
        if (mb_xml__starts(x, "?>")) {
            x->p += 2;
            return 0;
        }
        if (x->p == before)
            return mb_xml__err(x, "expected a space or '?>' in the XML declaration");
        struct mb_xml_attr a;
        int is_type = 0;
        if (mb_xml__attr(x, &is_type, &a))
            return -1;
        const char *v = a.val;
        size_t k = a.val_len;
        int ok;
        if (a.name_len == 7 && !memcmp(a.name, "version", 7))
            ok = k >= 3 && v[0] == '1' && v[1] == '.' && strspn(v + 2, "0123456789") == k - 2;
        else if (a.name_len == 8 && !memcmp(a.name, "encoding", 8))
            ok = k == 5 && !strncasecmp(v, "UTF-8", 5);
        else if (a.name_len == 10 && !memcmp(a.name, "standalone", 10))
            ok = (k == 3 && !memcmp(v, "yes", 3)) || (k == 2 && !memcmp(v, "no", 2));
        else
            return x->p = a.name,
                   mb_xml__err(x, "unknown attribute in the XML declaration (expected version, encoding, standalone)");
        if (!ok)
            return x->p = a.val, mb_xml__err(x, "XML declaration value refused (expected version=\"1.0\", "
                                                "encoding=\"UTF-8\" as lstopo writes, standalone=\"yes\"|\"no\")");
    }
}

/* Markup after '<'. */
static int mb_xml__markup(struct mb_xml *x)
{
    if (mb_xml__starts(x, "<!--"))
        return mb_xml__skip_to(x, "-->", "unterminated comment");
    if (mb_xml__starts(x, "<?"))
        return mb_xml__pi(x);
    if (mb_xml__starts(x, "<!DOCTYPE"))
        return mb_xml__doctype(x);
    if (mb_xml__starts(x, "<!"))
        return mb_xml__err(x, "markup declaration refused (ENTITY, CDATA: hwloc files have none)");
    x->p++;
    if (x->p < x->end && *x->p == '/') {
        x->p++;
        return mb_xml__end(x);
    }
    return mb_xml__start(x);
}

static int mb_xml__check(struct mb_xml *x, const char *buf, size_t len, const char *path, struct mb_err *err)
{
    x->s = x->p = buf;
    x->end = buf + len;
    x->path = path;
    x->err = err;
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        x->p = nul;
        return mb_xml__err(x, "NUL byte in the file (not a text file?)");
    }
    if (mb_xml__starts(x, "\xEF\xBB\xBF"))
        x->p += 3; /* UTF-8 byte order mark */
    while (x->p < x->end) {
        if (*x->p == '<') {
            if (mb_xml__markup(x))
                return -1;
        } else if (*x->p == '&') {
            if ((x->v2 && mb_xml_v2_text(x->v2, x->p)) || mb_xml__ref(x))
                return -1;
        } else {
            if (*x->p != ' ' && *x->p != '\t' && *x->p != '\n' && *x->p != '\r') {
                if (!x->depth)
                    return mb_xml__err(x, "text outside the root element");
                if (x->v2 && mb_xml_v2_text(x->v2, x->p))
                    return -1;
            }
            x->p++;
        }
    }
    if (x->depth)
        return mb_xml__err(x, "end of file inside an open element (truncated file?)");
    if (!x->roots)
        return mb_xml__err(x, "no <topology> element");
    return x->v2 ? mb_xml_v2_finish(x->v2) : 0;
}

int mb_topo_xml_check(const char *buf, size_t len, const char *path, struct mb_err *err)
{
    struct mb_xml *x = mb_calloc(1, sizeof *x);
    int rc = mb_xml__check(x, buf, len, path, err);
    mb_xml_v2_free(x->v2);
    mb_free(x);
    return rc;
}
