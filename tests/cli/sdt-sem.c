/*
 * A probe with a semaphore, as `dtrace -h` providers have them: the 2-byte
 * counter in .probes that *_ENABLED() reads (for test-sdt.sh's listing of
 * semaphore addresses).  Its own file: with _SDT_HAS_SEMAPHORES, every
 * probe of a file names its semaphore.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

__extension__ unsigned short sdt_sem_work_semaphore __attribute__((unused))
	__attribute__((section(".probes")));

int sdt_sem_run(int n);

int sdt_sem_run(int n)
{
	if (__builtin_expect(sdt_sem_work_semaphore, 0))
		STAP_PROBE1(sdt_sem, work, n);
	return n + 1;
}
