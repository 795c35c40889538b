/*
 * Code memory in the current process, near the code it serves.
 *
 * Chunks are mapped read+execute within +-2 GiB of an address, so that a
 * jmp rel32 there reaches them; every byte of code is written through
 * /proc/self/mem, so that no mapping is ever writable and executable at
 * once.  Memory is never unmapped or reused: a thread may still be running
 * in it.
 *
 * The agent allocates trampoline memory with it for the daemon (which then
 * writes the code over ptrace); the in-process installer (inproc.h) both
 * allocates and writes with it.
 */
#ifndef DP_PATCH_CODEMEM_H
#define DP_PATCH_CODEMEM_H

#include <stddef.h>
#include <stdint.h>

struct dp_code_pool;

/* A new pool, or NULL with errno. */
struct dp_code_pool *dp_code_pool_new(void);

/* Memory for `size` bytes of code within reach of `near`: 0 and *addr, or -errno. */
int dp_code_pool_alloc(struct dp_code_pool *pool, uint64_t near, size_t size, uint64_t *addr);

/*
 * Gives back the end of the latest allocation, [addr + used, addr + size),
 * when nothing was allocated after it: trampolines are sized for the worst
 * case and most need half of it.
 */
void dp_code_pool_trim(struct dp_code_pool *pool, uint64_t addr, size_t size, size_t used);

/* Writes code bytes at addr (any mapping of this process).  0 or -errno. */
int dp_code_write(struct dp_code_pool *pool, uint64_t addr, const void *bytes, size_t len);

#endif /* DP_PATCH_CODEMEM_H */
