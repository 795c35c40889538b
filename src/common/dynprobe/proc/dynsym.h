/*
 * Dynamic symbols of a process's mapped objects at run-time addresses
 * (dynsym.c), for injection and its tests.
 */
#ifndef DP_PROC_DYNSYM_H
#define DP_PROC_DYNSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"

/* The mapping's file name (after the last '/') starts with prefix. */
bool dp_map_is_named(const struct dp_map *m, const char *prefix);
/* The first mapping of an object whose file name starts with prefix, or NULL. */
const struct dp_map *dp_maps_find_object(const struct dp_maps *maps, const char *prefix);

/*
 * addrs[i]: the run-time address of the function syms[i] (default symbol
 * version first) of the first object named `lib` in maps; 0 when missing.
 * 0 when all were found, -ENOENT when some were not, -ESTALE when the file
 * on disk is no longer the mapped one, or another -errno.
 */
int dp_maps_dynsyms(pid_t pid, const struct dp_maps *maps, const char *lib,
		    const char *const *syms, size_t n, uint64_t *addrs);

#endif /* DP_PROC_DYNSYM_H */
