/*
 * Fault-safe memory reads for contexts and stack walks.
 *
 * A bad address must never crash the program, and catching SIGSEGV is not an
 * option: the program may install its own handler at any time and ours would
 * silently stop protecting the reads.  So memory is read directly only where
 * it cannot be unmapped while the hit runs:
 *   - the probed thread's stack from rsp minus the red zone up to the end of
 *     the mapping holding it (the thread is running on it);
 *   - the main executable's segments (never unloaded);
 *   - the segments of the probed object (its code is running).
 * Anything else goes through one process_vm_readv on our own pid, which
 * fails with EFAULT instead of faulting.  Measured here: ~900 ns per call
 * (a bare syscall costs ~125 ns on this VM), against a few ns for a direct
 * read, hence the fast ranges.
 *
 * The stack's mapping is found by reading /proc/self/maps with raw system
 * calls (async-signal-safe, no malloc, and not pthread cancellation points,
 * as libc's open and read are: a pending cancellation must never unwind a
 * thread out of the middle of a hit), once per thread and again only when
 * the stack grew below what was seen, a few times at most.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hit.h"

#define PAGE 4096ull
#define STACK_REFRESHES 16

static struct dpa_mem_ranges main_ranges;
static pid_t self_pid;

/* ---- ranges ----------------------------------------------------------- */

static bool in_ranges(const struct dpa_mem_ranges *rs, uint64_t addr, size_t len, uint64_t *end)
{
	if (!rs)
		return false;
	for (unsigned i = 0; i < rs->n; i++) {
		if (addr >= rs->r[i].lo && addr < rs->r[i].hi) {
			*end = rs->r[i].hi;
			return len <= rs->r[i].hi - addr;
		}
	}
	return false;
}

struct find_obj {
	uint64_t addr;
	bool main_only;
	struct dpa_mem_ranges *out;
	bool found;
};

static void add_segments(struct dl_phdr_info *info, struct dpa_mem_ranges *out)
{
	out->n = 0;
	for (int i = 0; i < info->dlpi_phnum && out->n < DPA_MEM_RANGES_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || !ph->p_memsz)
			continue;
		out->r[out->n].lo = info->dlpi_addr + ph->p_vaddr;
		out->r[out->n].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		out->n++;
	}
}

static int find_obj_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_obj *f = data;

	if (f->main_only) {
		/* The loader lists the executable first. */
		add_segments(info, f->out);
		f->found = true;
		return 1;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && f->addr >= lo && f->addr < lo + ph->p_memsz) {
			add_segments(info, f->out);
			f->found = true;
			return 1;
		}
	}
	return 0;
}

int dpa_mem_object_ranges(uint64_t addr, struct dpa_mem_ranges *out)
{
	struct find_obj f = { .addr = addr, .out = out };

	out->n = 0;
	dl_iterate_phdr(find_obj_cb, &f);
	return f.found ? 0 : -ENOENT;
}

void dpa_mem_setup(void)
{
	struct find_obj f = { .main_only = true, .out = &main_ranges };

	self_pid = getpid();
	dl_iterate_phdr(find_obj_cb, &f);
}

void dpa_mem_after_fork(void)
{
	self_pid = getpid();
}

/* ---- the stack -------------------------------------------------------- */

static uint64_t parse_hex(const char **p, const char *end)
{
	uint64_t v = 0;

	for (; *p < end; (*p)++) {
		char c = **p;
		unsigned d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			break;
		v = v << 4 | d;
	}
	return v;
}

/*
 * The mapping holding addr, from /proc/self/maps.  Lines are "lo-hi perms
 * ..."; only those two numbers matter.  A line cut by the buffer's end is
 * carried over to the next read.
 */
static bool stack_mapping(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	char buf[4096];
	size_t have = 0;
	bool found = false;
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	for (;;) {
		long n = syscall(SYS_read, fd, buf + have, sizeof(buf) - have);
		const char *p = buf, *end;

		if (n <= 0)
			break;
		end = buf + have + n;
		for (;;) {
			const char *nl = memchr(p, '\n', end - p);
			uint64_t a, b;

			if (!nl)
				break;
			a = parse_hex(&p, nl);
			if (p < nl && *p == '-') {
				p++;
				b = parse_hex(&p, nl);
				if (addr >= a && addr < b) {
					*lo = a;
					*hi = b;
					found = true;
					break;
				}
			}
			p = nl + 1;
		}
		if (found)
			break;
		have = end - p;
		if (have == sizeof(buf))	/* a line longer than the buffer */
			have = 0;
		memmove(buf, p, have);
	}
	syscall(SYS_close, fd);
	return found;
}

bool dpa_mem_stack_refresh(const struct dp_regs *regs)
{
	struct dpa_thread *t = &dpa_self;

	/* First use, or the stack grew, or the code runs on another stack
	 * (a coroutine, sigaltstack): look again while the budget lasts. */
	if (t->stack_refreshes >= STACK_REFRESHES)
		return false;
	t->stack_refreshes++;
	if (!stack_mapping(regs->rsp, &t->stack_lo, &t->stack_hi)) {
		t->stack_lo = t->stack_hi = 0;
		return false;
	}
	return true;
}

/* ---- reads ------------------------------------------------------------ */

/* Fills iov with [addr, addr+len) cut at page boundaries: a fault then ends
 * the transfer on a page boundary, and every byte counted was read. */
static int page_iovs(struct iovec *iov, int max, uint64_t addr, size_t len)
{
	int n = 0;

	while (len && n < max) {
		size_t chunk = PAGE - (addr & (PAGE - 1));

		if (chunk > len)
			chunk = len;
		iov[n].iov_base = (void *)(uintptr_t)addr;
		iov[n].iov_len = chunk;
		n++;
		addr += chunk;
		len -= chunk;
	}
	return n;
}

/* Bytes read through the kernel (a prefix of len), or -errno if none. */
static long kernel_read(void *dst, uint64_t addr, size_t len)
{
	struct iovec local = { dst, len }, remote[4];
	int nr = page_iovs(remote, 4, addr, len);
	ssize_t n;

	if (addr + len < addr)
		return -EFAULT;
	n = process_vm_readv(self_pid, &local, 1, remote, nr, 0);
	if (n < 0)
		return -errno;
	return n ? n : -EFAULT;
}

static bool direct(const struct dp_regs *regs, const struct dpa_mem_ranges *own, uint64_t addr,
		   size_t len, uint64_t *end)
{
	if (dpa_mem_on_stack(regs, addr, 1)) {
		*end = dpa_self.stack_hi;
		return len <= *end - addr;
	}
	return in_ranges(&main_ranges, addr, len, end) || in_ranges(own, addr, len, end);
}

int dpa_mem_read(const struct dp_regs *regs, const struct dpa_mem_ranges *own, void *dst,
		 uint64_t addr, size_t len)
{
	uint64_t end;
	long n;

	if (direct(regs, own, addr, len, &end)) {
		memcpy(dst, (const void *)(uintptr_t)addr, len);
		return 0;
	}
	n = kernel_read(dst, addr, len);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EFAULT;
}

long dpa_mem_read_str(const struct dp_regs *regs, const struct dpa_mem_ranges *own, char *dst,
		      uint64_t addr, size_t max)
{
	size_t have = 0;
	const char *nul;
	uint64_t end;
	long n;

	/* Directly as far as a fast range goes, then through the kernel. */
	if (direct(regs, own, addr, 1, &end)) {
		have = end - addr < max ? end - addr : max;
		nul = memchr((const void *)(uintptr_t)addr, 0, have);
		if (nul) {
			have = nul - (const char *)(uintptr_t)addr;
			memcpy(dst, (const void *)(uintptr_t)addr, have + 1);
			return (long)have;
		}
		memcpy(dst, (const void *)(uintptr_t)addr, have);
	}
	if (have < max) {
		n = kernel_read(dst + have, addr + have, max - have);
		if (n < 0) {
			dst[0] = 0;
			return n;
		}
		nul = memchr(dst + have, 0, n);
		if (nul)
			return nul - dst;
		if ((size_t)n < max - have) {
			/* The string runs into unreadable memory. */
			dst[0] = 0;
			return -EFAULT;
		}
	}
	dst[max] = 0;
	return -E2BIG;
}
