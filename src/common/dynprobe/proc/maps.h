/*
 * /proc/PID/maps: the mappings of a process, and free ranges near an address
 * (trampolines must lie within +-2 GiB of the code they serve).
 */
#ifndef DP_PROC_MAPS_H
#define DP_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dp_map {
	uint64_t start, end;
	unsigned prot;		/* PROT_READ | PROT_WRITE | PROT_EXEC */
	uint64_t offset;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	char *path;		/* NULL for anonymous mappings */
};

struct dp_maps {
	struct dp_map *v;
	size_t n;
};

/* Reads /proc/PID/maps (pid 0: this process).  0 or -errno. */
int dp_maps_read(pid_t pid, struct dp_maps *out);
void dp_maps_free(struct dp_maps *maps);

/* The mapping holding addr, or NULL. */
const struct dp_map *dp_maps_find(const struct dp_maps *maps, uint64_t addr);

/*
 * A free page-aligned range of `size` bytes lying wholly within `reach` bytes
 * of `near` (both ways), the closest one first.  0 and *addr, or -ENOSPC.
 */
int dp_maps_find_gap(const struct dp_maps *maps, uint64_t near, uint64_t size, uint64_t reach,
		     uint64_t *addr);

#endif /* DP_PROC_MAPS_H */
