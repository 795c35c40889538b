/*
 * The `dtrace -h` provider of sdt-prov.d in use (for sdt-args.c): probes
 * behind their *_ENABLED() guards, whose runs are counted, and the
 * semaphores as the program reads them.
 */
#include <stdio.h>
#include <unistd.h>

#include "sdt-prov.h"

void sdt_prov_round(int n);
void sdt_prov_show(void);

static unsigned guarded_work, guarded_done;

void sdt_prov_round(int n)
{
	if (SDT_PROV_WORK_ENABLED()) {
		guarded_work++;
		printf("%d sdt_prov:work { arg0 = %d, arg1 = %u }\n", (int)getpid(), n, guarded_work);
		fflush(stdout);
		SDT_PROV_WORK(n, (long)guarded_work);
	}
	if (SDT_PROV_DONE_ENABLED()) {
		guarded_done++;
		printf("%d sdt_prov:done { arg0 = %d }\n", (int)getpid(), n);
		fflush(stdout);
		SDT_PROV_DONE(n);
	}
}

/* "sem PID WORK DONE RUNS_WORK RUNS_DONE" */
void sdt_prov_show(void)
{
	printf("sem %d %u %u %u %u\n", (int)getpid(), (unsigned)sdt_prov_work_semaphore,
	       (unsigned)sdt_prov_done_semaphore, guarded_work, guarded_done);
}
