/* Parsing /proc/PID/maps and finding room near an address. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc/maps.h"

/* Below this the kernel refuses mappings (vm.mmap_min_addr) or code lives. */
#define LOWEST_ADDR 0x100000ull
/* The top of the 47-bit user address space, less a guard page. */
#define HIGHEST_ADDR 0x7ffffffff000ull

static int parse_line(char *line, struct dp_map *m)
{
	char perms[5] = "";
	int path_at = 0;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &m->start, &m->end, perms, &m->offset, &m->dev_major, &m->dev_minor,
		   &m->inode, &path_at) < 7)
		return -EINVAL;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	if (path_at && line[path_at] && line[path_at] != '\n') {
		size_t len = strcspn(line + path_at, "\n");

		m->path = strndup(line + path_at, len);
		if (!m->path)
			return -ENOMEM;
	}
	return 0;
}

int dp_maps_read(pid_t pid, struct dp_maps *out)
{
	char name[64], *line = NULL;
	size_t cap = 0, alloc = 0;
	FILE *f;
	int ret = 0;

	out->v = NULL;
	out->n = 0;
	if (pid)
		snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	else
		snprintf(name, sizeof(name), "/proc/self/maps");
	f = fopen(name, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (out->n == alloc) {
			size_t n = alloc ? alloc * 2 : 64;
			struct dp_map *v = realloc(out->v, n * sizeof(*v));

			if (!v) {
				ret = -ENOMEM;
				break;
			}
			out->v = v;
			alloc = n;
		}
		ret = parse_line(line, &out->v[out->n]);
		if (ret)
			break;
		out->n++;
	}
	free(line);
	fclose(f);
	if (ret)
		dp_maps_free(out);
	return ret;
}

void dp_maps_free(struct dp_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		free(maps->v[i].path);
	free(maps->v);
	maps->v = NULL;
	maps->n = 0;
}

const struct dp_map *dp_maps_find(const struct dp_maps *maps, uint64_t addr)
{
	for (size_t i = 0; i < maps->n; i++)
		if (addr >= maps->v[i].start && addr < maps->v[i].end)
			return &maps->v[i];
	return NULL;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

int dp_maps_find_gap(const struct dp_maps *maps, uint64_t near, uint64_t size, uint64_t reach,
		     uint64_t *addr)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = near > reach ? near - reach : 0;
	uint64_t hi = near + reach;
	uint64_t best = 0, best_dist = UINT64_MAX;

	size = (size + page - 1) & ~(page - 1);
	if (lo < LOWEST_ADDR)
		lo = LOWEST_ADDR;
	if (hi > HIGHEST_ADDR)
		hi = HIGHEST_ADDR;
	/* Gaps: before the first mapping, between two, after the last. */
	for (size_t i = 0; i <= maps->n; i++) {
		uint64_t gs = i ? maps->v[i - 1].end : 0;
		uint64_t ge = i < maps->n ? maps->v[i].start : HIGHEST_ADDR;
		uint64_t a;

		gs = (gs > lo ? gs : lo);
		gs = (gs + page - 1) & ~(page - 1);
		ge = (ge < hi ? ge : hi) & ~(page - 1);
		if (ge <= gs || ge - gs < size)
			continue;
		/* The point of the gap closest to near (gs..ge lies within reach). */
		if (ge <= near)
			a = ge - size;
		else if (gs >= near)
			a = gs;
		else {
			a = near & ~(page - 1);
			if (a + size > ge)
				a = ge - size;
		}
		if (distance(a, near) < best_dist) {
			best = a;
			best_dist = distance(a, near);
		}
	}
	if (!best)
		return -ENOSPC;
	*addr = best;
	return 0;
}
