/*
 * SDT semaphores: the 2-byte counters (`unsigned short` in .probes) that
 * `PROVIDER_NAME_ENABLED()` tests, raised in each process while an event
 * of the probe is installed there, and lowered when it no longer is.
 *
 * Each change is a read-modify-write of the counter through /proc/PID/mem,
 * never a plain store: other tracers (bcc, the kernel's uprobe reference
 * counters, another daemon's event) may hold it too.  A process holds a
 * raise per event (struct dpd_sem_hold): the raise taken when the event was
 * installed, or one it came with, adopted without writing (a forked child
 * inherits its parent's counters and patches; an agent that reconnects to a
 * restarted daemon reports patches whose raises are still there).
 *
 * A semaphore must lie in a writable mapping of the object: /proc/PID/mem
 * writes even read-only pages, which would be writing where the program
 * itself cannot; such a probe is refused in that process.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "daemon.h"
#include "proc/maps.h"
#include "proc/proc-status.h"

/* The distinct semaphores of ev (link-time addresses), at most max. */
static size_t sems_of(const struct dpd_event *ev, uint64_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < ev->sdt.nsites; i++) {
		uint64_t s = ev->sdt.sites[i].semaphore;
		bool seen = !s;

		for (size_t k = 0; k < n && !seen; k++)
			seen = out[k] == s;
		if (!seen && n < max)
			out[n++] = s;
	}
	return n;
}

#define SEMS_MAX 16

int dpd_sem_check(const struct dpd_event *ev, pid_t pid, uint64_t bias, struct dp_err *msg)
{
	uint64_t sems[SEMS_MAX];
	size_t n = sems_of(ev, sems, SEMS_MAX);
	struct dp_maps maps;
	int ret = 0;

	if (!n)
		return 0;
	if (dp_maps_read(pid, &maps))
		return dp_err_set(msg, -ESRCH, "no process %d (it exited)", (int)pid);
	for (size_t i = 0; i < n && !ret; i++) {
		uint64_t at = sems[i] + bias;
		const struct dp_map *m = dp_maps_find(&maps, at);

		if (!m || !dp_maps_find(&maps, at + 1))
			ret = dp_err_set(msg, -EFAULT, "the semaphore of %s:%s at 0x%" PRIx64
					 " (0x%" PRIx64 " in %s) is not mapped in process %d: the "
					 "note does not match the loaded object", ev->sdt.provider,
					 ev->sdt.name, at, sems[i], ev->path, (int)pid);
		else if (!(m->prot & PROT_WRITE))
			ret = dp_err_set(msg, -EACCES, "the semaphore of %s:%s at 0x%" PRIx64
					 " (0x%" PRIx64 " in %s) lies in a read-only page of "
					 "process %d (%s): the program could not count on it; "
					 "refused", ev->sdt.provider, ev->sdt.name, at, sems[i],
					 ev->path, (int)pid, m->path ? m->path : "anonymous");
	}
	dp_maps_free(&maps);
	return ret;
}

/* Adds delta to the counter at addr in pid: 0 or -errno. */
static int sem_add(pid_t pid, uint64_t addr, int delta)
{
	uint16_t v;
	int ret = dp_proc_mem_read(pid, addr, &v, sizeof(v));

	if (ret)
		return ret;
	if ((delta > 0 && v == UINT16_MAX) || (delta < 0 && v == 0))
		return -ERANGE;
	v = (uint16_t)(v + delta);
	return dp_proc_mem_write(pid, addr, &v, sizeof(v));
}

static void sem_all(struct dpd_proc *p, const struct dpd_event *ev, uint64_t bias, int delta)
{
	uint64_t sems[SEMS_MAX];
	size_t n = sems_of(ev, sems, SEMS_MAX);

	for (size_t i = 0; i < n; i++) {
		int ret = sem_add(p->pid, sems[i] + bias, delta);

		if (ret)
			dpd_info("process %d: the semaphore of %s at 0x%" PRIx64 " stays as it "
				 "was (%s)", (int)p->pid, ev->names[0], sems[i] + bias,
				 ret == -ERANGE ? (delta > 0 ? "at its maximum" : "already 0")
						: strerror(-ret));
	}
}

static bool held(const struct dpd_proc *p, const struct dpd_event *ev)
{
	for (uint32_t i = 0; i < p->nholds; i++)
		if (p->holds[i].ev == ev)
			return true;
	return false;
}

void dpd_sem_hold(struct dpd_proc *p, const struct dpd_event *ev, uint64_t bias, bool adopt)
{
	struct dpd_sem_hold *h;
	uint64_t sems[1];

	if (ev->kind != DP_CLIENT_KIND_SDT || !sems_of(ev, sems, 1) || held(p, ev))
		return;
	h = realloc(p->holds, (p->nholds + 1) * sizeof(*h));
	if (!h) {
		dpd_err("process %d: out of memory: the semaphore of %s is not raised",
			(int)p->pid, ev->names[0]);
		return;
	}
	p->holds = h;
	p->holds[p->nholds++] = (struct dpd_sem_hold){ ev, bias };
	if (!adopt)
		sem_all(p, ev, bias, +1);
	dpd_dbg("process %d: semaphore of %s %s", (int)p->pid, ev->names[0],
		adopt ? "raised already (inherited or recovered)" : "raised");
}

void dpd_sem_settle(struct dpd_proc *p)
{
	for (uint32_t i = 0; i < p->nholds;) {
		const struct dpd_sem_hold *h = &p->holds[i];
		uint32_t j, k;
		uint64_t bias;

		if (dpd_proc_count_sites(p, h->ev, &j, &k)) {
			i++;
			continue;
		}
		/* Only where the object still lies: a library unloaded (or
		 * loaded again elsewhere) took its counters with it. */
		if (!dpd_object_bias(h->ev->obj, p->pid, &bias) && bias == h->bias)
			sem_all(p, h->ev, h->bias, -1);
		dpd_dbg("process %d: semaphore of %s lowered", (int)p->pid, h->ev->names[0]);
		p->holds[i] = p->holds[--p->nholds];
	}
}

void dpd_sem_adopt(struct dpd_proc *p)
{
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		uint32_t j, k;
		uint64_t bias;

		if (ev->kind == DP_CLIENT_KIND_SDT && dpd_proc_count_sites(p, ev, &j, &k) &&
		    !dpd_object_bias(ev->obj, p->pid, &bias))
			dpd_sem_hold(p, ev, bias, true);
	}
}
