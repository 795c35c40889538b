/* Guarded decoding (guard.h). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guard.h"

static uint8_t *guard_page_end;	/* first byte of the PROT_NONE page */
static sigjmp_buf fault_env;
static volatile sig_atomic_t decoding;

static void on_fault(int sig)
{
	if (decoding)
		siglongjmp(fault_env, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

int guard_init(void)
{
	long page = sysconf(_SC_PAGESIZE);
	struct sigaction sa;
	uint8_t *map;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -errno;
	if (mprotect(map + page, page, PROT_NONE))
		return -errno;
	guard_page_end = map + page;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	return 0;
}

int decode_guarded(const uint8_t *bytes, size_t n, struct dp_insn *insn)
{
	uint8_t *p = guard_page_end - n;
	int rc;

	memcpy(p, bytes, n);
	memset(insn, GUARD_POISON, sizeof(*insn));
	if (sigsetjmp(fault_env, 1)) {
		decoding = 0;
		return -EFAULT;
	}
	decoding = 1;
	rc = dp_insn_decode(p, n, insn);
	decoding = 0;
	return rc;
}
