/*
 * topo_xml.h -- structural check of an hwloc XML buffer before libhwloc sees
 * it (private to the topology module).
 */
#ifndef TOPO_XML_H
#define TOPO_XML_H

#include <stddef.h>

#include "mb_util.h"

/**
 * @brief Check that buf is a well-formed hwloc topology document that
 * Debian's hwloc 2.9 import can take without crashing: one <topology> root,
 * balanced elements, quoted attributes, every <object> with a type=, no NUL
 * bytes, no DOCTYPE internal subset or ENTITY declaration, and no entity
 * reference other than the five predefined ones and numeric character
 * references, no attribute twice. hwloc 2.9 segfaults on an <object> without
 * type= and on entity references from a DOCTYPE, and libxml2 leaks on invalid
 * XML. A version 1.x file is refused; a 2.x file's content is checked too
 * (topo_xml_v2.h: elements and attributes of hwloc2.dtd, the four sets on
 * every normal and memory object, sets nested in their parent's, disjoint
 * siblings, unique gp_index); a later version is left to hwloc, which refuses
 * it before reading any object.
 * @param[in]  buf   the file's bytes (NUL-terminated at len)
 * @param[in]  path  file name for messages
 * @param[out] err   "path:line:col: what was expected"
 * @return 0, or -1 with err set.
 */
int mb_topo_xml_check(const char *buf, size_t len, const char *path, struct mb_err *err);

#endif /* TOPO_XML_H */
