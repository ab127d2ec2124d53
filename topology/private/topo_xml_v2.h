/*
 * topo_xml_v2.h -- the content check of a version 2.x hwloc XML file, fed by
 * topo_xml.c's scanner one element at a time (private to the topology module).
 *
 * Expectations come from hwloc 2.9's hwloc2.dtd (elements, their parents and
 * attributes) and from lstopo 2.x's export (every normal and memory object
 * carries cpuset, complete_cpuset, nodeset, complete_nodeset and gp_index; I/O
 * and Misc objects carry no sets; children lie inside their parent's sets).
 */
#ifndef TOPO_XML_V2_H
#define TOPO_XML_V2_H

#include <stddef.h>

#include "mb_util.h"

#define MB_XML_MAX_ATTRS 64 /* per element; lstopo writes at most ~12 */

/** One attribute as it stands in the file (value not unescaped). */
struct mb_xml_attr {
    const char *name, *val;
    size_t name_len, val_len;
};

struct mb_xml_v2;

/** @brief line and column (1-based) of q in the buffer s. */
void mb_xml_pos(const char *s, const char *q, int *line, int *col);

/** @brief The major number of a <topology version="M.m">; 1 when there is none (hwloc 1.x wrote none). */
int mb_xml_v2_version(const struct mb_xml_attr *a, int na);

/** @brief A checker for the buffer s (for positions) of file path; errors go to err. */
struct mb_xml_v2 *mb_xml_v2_new(const char *s, const char *path, struct mb_err *err);

/** @brief A start tag whose name (n bytes) begins at name. 0, or -1 with err set. */
int mb_xml_v2_start(struct mb_xml_v2 *v, const char *name, size_t n, const struct mb_xml_attr *a, int na);

/** @brief The element last started ends (end tag or "/>"). */
int mb_xml_v2_end(struct mb_xml_v2 *v);

/** @brief Text other than white space at `at` inside the open element. */
int mb_xml_v2_text(struct mb_xml_v2 *v, const char *at);

/** @brief End of file: the checks that need the whole file (unique gp_index). */
int mb_xml_v2_finish(struct mb_xml_v2 *v);

/** @brief Free; accepts NULL. */
void mb_xml_v2_free(struct mb_xml_v2 *v);

#endif /* TOPO_XML_V2_H */
