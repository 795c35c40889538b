/*
 * Code memory near the code it serves (see codemem.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "patch/codemem.h"
#include "proc/maps.h"

#define CHUNK_SIZE (256 * 1024)
/* A rel32 reaches +-2 GiB; keep a margin for the code inside the chunk. */
#define REACH ((1ull << 31) - 2 * CHUNK_SIZE)

struct chunk {
	uint64_t start, used;
	struct chunk *next;
};

struct dp_code_pool {
	struct chunk *chunks;
	int mem_fd;		/* /proc/self/mem */
};

struct dp_code_pool *dp_code_pool_new(void)
{
	struct dp_code_pool *pool = calloc(1, sizeof(*pool));

	if (!pool)
		return NULL;
	pool->mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (pool->mem_fd < 0) {
		int err = errno;

		free(pool);
		errno = err;
		return NULL;
	}
	return pool;
}

static bool in_reach(uint64_t a, uint64_t near)
{
	return (a > near ? a - near : near - a) < REACH;
}

static int chunk_new(struct dp_code_pool *pool, uint64_t near, struct chunk **out)
{
	struct dp_maps maps;
	struct chunk *c;
	uint64_t addr;
	void *p;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* Another thread may map the gap first: look again then. */
	for (int tries = 0; tries < 8; tries++) {
		ret = dp_maps_read(0, &maps);
		if (ret)
			break;
		ret = dp_maps_find_gap(&maps, near, CHUNK_SIZE, REACH, &addr);
		dp_maps_free(&maps);
		if (ret)
			break;
		p = mmap((void *)(uintptr_t)addr, CHUNK_SIZE, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED && (uint64_t)(uintptr_t)p == addr) {
			c->start = addr;
			c->next = pool->chunks;
			pool->chunks = c;
			*out = c;
			return 0;
		}
		if (p != MAP_FAILED)
			munmap(p, CHUNK_SIZE);	/* an old kernel ignored the flag */
		ret = -errno;
		if (errno != EEXIST)
			break;
	}
	free(c);
	return ret ? ret : -ENOSPC;
}

int dp_code_pool_alloc(struct dp_code_pool *pool, uint64_t near, size_t size, uint64_t *addr)
{
	struct chunk *c;
	int ret;

	size = (size + 15) & ~(size_t)15;
	if (size > CHUNK_SIZE)
		return -E2BIG;
	for (c = pool->chunks; c; c = c->next)
		if (CHUNK_SIZE - c->used >= size && in_reach(c->start, near) &&
		    in_reach(c->start + CHUNK_SIZE, near))
			break;
	if (!c) {
		ret = chunk_new(pool, near, &c);
		if (ret)
			return ret;
	}
	*addr = c->start + c->used;
	c->used += size;
	return 0;
}

void dp_code_pool_trim(struct dp_code_pool *pool, uint64_t addr, size_t size, size_t used)
{
	size = (size + 15) & ~(size_t)15;
	used = (used + 15) & ~(size_t)15;
	for (struct chunk *c = pool->chunks; c; c = c->next) {
		if (addr >= c->start && addr - c->start + size == c->used && used <= size) {
			c->used -= size - used;
			return;
		}
	}
}

int dp_code_write(struct dp_code_pool *pool, uint64_t addr, const void *bytes, size_t len)
{
	ssize_t n = pwrite(pool->mem_fd, bytes, len, (off_t)addr);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}
