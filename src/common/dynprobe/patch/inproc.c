/*
 * In-process installation of patches (see inproc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "patch/inproc.h"
#include "proc/maps.h"

#define CHUNK_SIZE (256 * 1024)
#define JMP_LEN 5			/* jmp rel32 */
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

/*
 * Gives back the end of the latest allocation, [addr + used, addr + size),
 * when nothing was allocated after it: trampolines are sized for the worst
 * case and most need half of it.
 */
static void code_pool_trim(struct dp_code_pool *pool, uint64_t addr, size_t size, size_t used)
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

/* A jmp rel8 at the site reaches the hop. */
static bool hop_reaches(const struct dp_inproc_site *site)
{
	int64_t rel = (int64_t)(site->hop.addr - (site->win.addr + DP_HOP_SITE_LEN));

	return rel >= -128 && rel <= 127;
}

/* jmp rel32 at `at` to `target`, then int3s up to `len` bytes. */
static int jump_write(struct dp_code_pool *pool, uint64_t at, uint64_t target, size_t len)
{
	uint8_t code[DP_WINDOW_MAX_LEN];
	int32_t rel = (int32_t)(target - (at + JMP_LEN));

	if (!dp_rel32_reaches(at + JMP_LEN, target) || len > sizeof(code))
		return -ERANGE;
	memset(code, 0xcc, len);
	code[0] = 0xe9;
	memcpy(code + 1, &rel, 4);
	return dp_code_write(pool, at, code, len);
}

int dp_inproc_install(struct dp_code_pool *pool, struct dp_inproc_site *site,
		      const struct dp_patch *plan, uint64_t bias, dp_handler_fn handler,
		      void *const *args, enum dp_vec_save vec, enum dp_reason *why)
{
	struct dp_tramp_hook hooks[DP_PATCH_MAX_POINTS];
	size_t nhooks = plan->method == DP_SITE_JUMP ? plan->npoints : 0;
	size_t cap = dp_tramp_max_len(nhooks, vec);
	uint8_t *code, patch[DP_WINDOW_MAX_LEN];
	struct dp_emit e;
	uint64_t at;
	int ret;

	*why = DP_REASON_NONE;
	if (plan->method == DP_SITE_REFUSED) {
		*why = plan->reason;
		return -ENOTSUP;
	}
	memset(site, 0, sizeof(*site));
	site->method = plan->method;
	site->win = plan->win;
	site->win.addr += bias;
	site->npoints = plan->npoints;
	site->handler = handler;
	for (unsigned i = 0; i < plan->npoints; i++) {
		site->points[i] = plan->points[i] + bias;
		site->args[i] = args[i];
		hooks[i] = (struct dp_tramp_hook){ .addr = site->points[i], .arg = args[i] };
	}

	/* The bytes must still be what the plan read from the file. */
	if (memcmp((const void *)(uintptr_t)site->win.addr, plan->win.bytes, plan->win.len))
		return -ESTALE;
	if (site->method == DP_SITE_JUMP && site->win.len < JMP_LEN) {
		if (plan->hop.len != DP_HOP_LEN || site->win.len < DP_HOP_SITE_LEN)
			return -EINVAL;
		site->hop = plan->hop;
		site->hop.addr += bias;
		if (!hop_reaches(site) ||
		    memcmp((const void *)(uintptr_t)site->hop.addr, plan->hop.bytes, DP_HOP_LEN))
			return -ESTALE;
	}

	code = malloc(cap);
	if (!code)
		return -ENOMEM;
	ret = dp_code_pool_alloc(pool, site->win.addr, cap, &at);
	if (ret)
		goto out;
	dp_emit_init(&e, code, cap, at);
	ret = dp_tramp_build(&e, &site->win, hooks, nhooks, handler, vec, &site->tramp, why);
	if (ret)
		goto out;
	code_pool_trim(pool, at, cap, site->tramp.len);
	/* The trampoline first, then the jump that reaches it. */
	ret = dp_code_write(pool, at, code, site->tramp.len);
	if (ret)
		goto out;
	if (site->method == DP_SITE_JUMP && site->hop.len) {
		ret = jump_write(pool, site->hop.addr, site->tramp.entry, DP_HOP_LEN);
		if (ret)
			goto out;
		memset(patch, 0xcc, site->win.len);
		patch[0] = 0xeb;
		patch[1] = (uint8_t)(int8_t)(site->hop.addr - (site->win.addr + DP_HOP_SITE_LEN));
		ret = dp_code_write(pool, site->win.addr, patch, site->win.len);
		if (ret)
			dp_code_write(pool, site->hop.addr, site->hop.bytes, DP_HOP_LEN);
	} else if (site->method == DP_SITE_JUMP) {
		ret = jump_write(pool, site->win.addr, site->tramp.entry, site->win.len);
	} else {
		patch[0] = 0xcc;
		ret = dp_code_write(pool, site->win.addr, patch, 1);
	}
	site->installed = !ret;
out:
	free(code);
	return ret;
}

int dp_inproc_remove(struct dp_code_pool *pool, struct dp_inproc_site *site)
{
	int ret;

	if (!site->installed)
		return 0;
	/* The site first: then nothing new reaches the hop. */
	ret = dp_code_write(pool, site->win.addr, site->win.bytes, site->win.len);
	if (!ret && site->hop.len)
		ret = dp_code_write(pool, site->hop.addr, site->hop.bytes, DP_HOP_LEN);
	if (!ret)
		site->installed = false;
	return ret;
}

void dp_inproc_trap(const struct dp_inproc_site *site, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct dp_regs r = {
		.rax = g[REG_RAX], .rcx = g[REG_RCX], .rdx = g[REG_RDX], .rbx = g[REG_RBX],
		.rsp = g[REG_RSP], .rbp = g[REG_RBP], .rsi = g[REG_RSI], .rdi = g[REG_RDI],
		.r8 = g[REG_R8], .r9 = g[REG_R9], .r10 = g[REG_R10], .r11 = g[REG_R11],
		.r12 = g[REG_R12], .r13 = g[REG_R13], .r14 = g[REG_R14], .r15 = g[REG_R15],
		.rip = site->win.addr, .rflags = g[REG_EFL],
	};

	for (unsigned i = 0; i < site->npoints; i++)
		site->handler(site->args[i], &r);
	g[REG_RAX] = r.rax; g[REG_RCX] = r.rcx; g[REG_RDX] = r.rdx; g[REG_RBX] = r.rbx;
	g[REG_RSP] = r.rsp; g[REG_RBP] = r.rbp; g[REG_RSI] = r.rsi; g[REG_RDI] = r.rdi;
	g[REG_R8] = r.r8; g[REG_R9] = r.r9; g[REG_R10] = r.r10; g[REG_R11] = r.r11;
	g[REG_R12] = r.r12; g[REG_R13] = r.r13; g[REG_R14] = r.r14; g[REG_R15] = r.r15;
	g[REG_EFL] = r.rflags;
	g[REG_RIP] = site->tramp.insn_at[0];
}
