/*
 * The daemon parses and formats contexts with the agent's own code
 * (context.c, compiled in here as well), so that a spec means the same on
 * both sides.  That file also evaluates contexts at probe hits, which only
 * ever happens inside the agent: the stand-ins below satisfy the linker for
 * that half and are never called in the daemon.
 */
#include <errno.h>

#include "../../lib/lttng-ust-dynprobe/context.c"

__thread struct dp_thread dp_self;

int dp_mem_read(const struct dp_regs *regs, const struct dp_mem_ranges *own, void *dst,
		uint64_t addr, size_t len)
{
	return -ENOSYS;
}

long dp_mem_read_str(const struct dp_regs *regs, const struct dp_mem_ranges *own, char *dst,
		     uint64_t addr, size_t max)
{
	return -ENOSYS;
}

size_t dp_bt_cfi_scratch(void)
{
	return 0;
}

unsigned dp_bt_fp(const struct dp_regs *regs, bool at_entry, uint64_t *out, unsigned depth)
{
	return 0;
}

unsigned dp_bt_cfi(const struct dp_regs *regs, uint64_t *out, unsigned depth, void *scratch)
{
	return 0;
}
