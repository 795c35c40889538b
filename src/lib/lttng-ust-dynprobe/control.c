/*
 * The control thread (see control.h): connection to lttng-dynprobed, the
 * table of what the daemon defined and installed here, and the answers to
 * its requests.
 *
 * Locking: ctl.lock guards the tables, the code pool and the descriptor.
 * Only the control thread changes them; the lock is there for fork, whose
 * prepare handler takes it so that the child never copies a half-updated
 * table.  It is never held across socket I/O or a call into the hit path's
 * code (dpa_probe_new, dpa_trap_*), which may take locks of their own that a
 * forking thread could hold.  Where locks nest, the order is send_lock
 * (closing the descriptor), ctl.lock, go.lock (fork's prepare handler).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "control.h"
#include "deadline.h"
#include "follow.h"
#include "line.h"
#include "patch/codemem.h"
#include "probe.h"
#include "proto/app.h"
#include "u64map.h"

#define THREAD_NAME "lttng-dynprobe"
/* How long connect() may wait on a daemon whose backlog is full. */
#define CONNECT_TIMEOUT_S 2
/* While int3 sites exist, how often the SIGTRAP handler is checked. */
#define TRAP_CHECK_MS 1000
/* A wait for GO without a time limit (a wait of -1 in the environment). */
#define NO_LIMIT UINT_MAX

struct probe_rec {
	struct dp_app_probe info;	/* id, site, flags, event (stats filled on demand) */
	struct dpa_probe *probe;
};

static struct {
	pthread_mutex_t lock;
	struct probe_rec *probes;
	uint32_t nprobes;
	size_t probes_cap;
	struct dp_app_patch *patches;
	uint32_t npatches;
	size_t patches_cap;
	uint32_t nint3;			/* patches of method int3 */
	/* NOTE_WRITES: what patches write besides their windows (few:
	 * looked up by a scan). */
	struct dp_app_led *leds;
	uint32_t nleds;
	size_t leds_cap;
	/* Lookups by probe id and by site: an index in probes[] and
	 * patches[] (rebuilt when patches[] is compacted). */
	struct dp_u64map probe_ix, patch_ix;
	struct dp_code_pool *pool;	/* ALLOC_CODE memory, never freed */

	int fd;				/* the connection, or -1 */
	dev_t fd_dev;			/* ... and its identity, to notice that the */
	ino_t fd_ino;			/* program closed or replaced it */

	bool started, atfork_done, debug;
	uint32_t max_probes;		/* DP_APP_MAX_PROBES, or less (tests) */
	uint8_t minor;			/* the minor HELLO announces */
	bool stopping;			/* dpa_control_stop was called (atomic) */
	unsigned wait_ms;		/* the constructor's wait (0: none, injected) */
	/* Connected (HELLO answered) and serving, with the daemon's minor:
	 * both atomic, read by dlopen's callers. */
	bool serving;
	uint8_t daemon_minor;
	uint32_t seq;			/* our own messages' sequence numbers */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} ctl = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};

/*
 * The constructor's wait for GO (control.h): `released` once the
 * daemon said GO, or once there is nothing to wait for (no daemon, a refusal,
 * a lost connection).  Separate from ctl.lock, which the control thread
 * takes while serving the very requests the constructor waits on.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool released;
	const char *why;		/* what released it (debug lines) */
	/* dlopen's waits: MAPPED cookies sent, and the latest answered
	 * (every cookie up to it); `ended` counts lost connections, which
	 * end the waits begun before. */
	uint64_t mapped_sent, mapped_done;
	uint64_t ended;
} go = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

/* Ends the constructor's wait for GO; why: what ended it. */
static void go_release(const char *why)
{
	pthread_mutex_lock(&go.lock);
	if (!go.released)
		go.why = why;
	go.released = true;
	pthread_cond_broadcast(&go.cond);
	pthread_mutex_unlock(&go.lock);
}

/* The daemon answered MAPPED up to `cookie`. */
static void mapped_release(uint64_t cookie)
{
	pthread_mutex_lock(&go.lock);
	if (cookie > go.mapped_done)
		go.mapped_done = cookie;
	pthread_cond_broadcast(&go.cond);
	pthread_mutex_unlock(&go.lock);
}

/* The connection is over: no MAPPED sent on it will be answered. */
static void serving_end(void)
{
	__atomic_store_n(&ctl.serving, false, __ATOMIC_RELEASE);
	pthread_mutex_lock(&go.lock);
	go.ended++;
	pthread_cond_broadcast(&go.cond);
	pthread_mutex_unlock(&go.lock);
}

/* Set in the control thread (the one that answers must never wait). */
static __thread bool in_control_thread;

/* Serializes sends on the connection: the control thread's replies and
 * MAPPED from the threads that dlopen. */
static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;

/* Debug lines (LTTNG_DYNPROBE_DEBUG) on stderr, one write each: the
 * program's stdio buffers are never touched. */
__attribute__((format(printf, 1, 2)))
static void dbg(const char *fmt, ...)
{
	char head[48];
	va_list ap;

	if (!ctl.debug)
		return;
	snprintf(head, sizeof(head), "lttng-dynprobe[%d]: ", (int)getpid());
	va_start(ap, fmt);
	dp_line_vwrite(STDERR_FILENO, head, fmt, ap);
	va_end(ap);
}

static const char *err_text(int err)
{
	const char *s = strerrordesc_np(err < 0 ? -err : err);

	return s ? s : "unknown error";
}

static bool stopping(void)
{
	return __atomic_load_n(&ctl.stopping, __ATOMIC_ACQUIRE);
}

/* ---- the descriptor ---------------------------------------------------- */

/* Whether ctl.fd is still the socket we opened (the program may close
 * descriptors it does not know, and open others at the same number). */
static bool fd_is_ours(int fd)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) && S_ISSOCK(st.st_mode) && st.st_dev == ctl.fd_dev &&
	       st.st_ino == ctl.fd_ino;
}

static void conn_close(void)
{
	int fd;

	/* send_lock first: a thread sending MAPPED checks that the
	 * descriptor is ours and sends under it, and must not see it closed
	 * (its number maybe the program's already) in between. */
	pthread_mutex_lock(&send_lock);
	pthread_mutex_lock(&ctl.lock);
	fd = ctl.fd;
	if (fd_is_ours(fd))
		close(fd);
	ctl.fd = -1;
	pthread_mutex_unlock(&ctl.lock);
	pthread_mutex_unlock(&send_lock);
}

/* A connected socket to the daemon, or -errno. */
static int conn_open(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_S };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct stat st;
	int fd, ret;

	/* Created under the lock, so that a fork from now on knows the
	 * descriptor and the child closes it. */
	pthread_mutex_lock(&ctl.lock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && !fstat(fd, &st)) {
		ctl.fd = fd;
		ctl.fd_dev = st.st_dev;
		ctl.fd_ino = st.st_ino;
	} else if (fd >= 0) {
		close(fd);
		fd = -1;
	}
	pthread_mutex_unlock(&ctl.lock);
	if (fd < 0)
		return -errno;

	memcpy(sa.sun_path, ctl.path, strlen(ctl.path));
	/* Bounds connect() on a daemon that does not accept. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		conn_close();
		return ret;
	}
	/* Only a daemon of ours, or root's, is believed. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		ret = -errno;
		conn_close();
		return ret;
	}
	if (cred.uid != 0 && cred.uid != geteuid()) {
		dbg("%s belongs to uid %u: not our daemon", ctl.path, (unsigned)cred.uid);
		conn_close();
		return -EPERM;
	}
	return fd;
}

/* ---- the tables ------------------------------------------------------- */

/* Callers hold ctl.lock. */
static struct probe_rec *probe_find(uint32_t id)
{
	uint32_t i;

	return dp_u64map_get(&ctl.probe_ix, id, &i) ? &ctl.probes[i] : NULL;
}

static struct dp_app_patch *patch_find(uint64_t site)
{
	uint32_t i;

	/* UINT32_MAX: a site removed since the index was last rebuilt. */
	return dp_u64map_get(&ctl.patch_ix, site, &i) && i != UINT32_MAX ? &ctl.patches[i] :
									    NULL;
}

/* The patch index again, after patches[] was compacted: 0 or -ENOMEM
 * (then lookups find nothing until the next rebuild succeeds). */
static int patch_ix_rebuild(void)
{
	int ret = 0;

	dp_u64map_clear(&ctl.patch_ix);
	for (uint32_t i = 0; i < ctl.npatches && !ret; i++)
		ret = dp_u64map_put(&ctl.patch_ix, ctl.patches[i].site, i);
	return ret;
}

/* What is installed, with fresh counters: arrays to free by the caller. */
static int state_snapshot(struct dp_app_state *s)
{
	struct dpa_probe **ptrs = NULL;
	struct dpa_trap_stats ts;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&ctl.lock);
	if (ctl.nprobes) {
		s->probes = calloc(ctl.nprobes, sizeof(*s->probes));
		ptrs = calloc(ctl.nprobes, sizeof(*ptrs));
	}
	if (ctl.npatches)
		s->patches = calloc(ctl.npatches, sizeof(*s->patches));
	if ((ctl.nprobes && (!s->probes || !ptrs)) || (ctl.npatches && !s->patches)) {
		ret = -ENOMEM;
	} else {
		s->nprobes = ctl.nprobes;
		for (uint32_t i = 0; i < ctl.nprobes; i++) {
			s->probes[i] = ctl.probes[i].info;
			ptrs[i] = ctl.probes[i].probe;
		}
		s->npatches = ctl.npatches;
		if (ctl.npatches)
			memcpy(s->patches, ctl.patches, ctl.npatches * sizeof(*s->patches));
	}
	pthread_mutex_unlock(&ctl.lock);
	if (ret) {
		free(s->probes);
		free(s->patches);
		free(ptrs);
		memset(s, 0, sizeof(*s));
		return ret;
	}
	for (uint32_t i = 0; i < s->nprobes; i++) {
		struct dpa_probe_stats st;

		dpa_probe_stats(ptrs[i], &st);
		s->probes[i].hits = st.hits;
		s->probes[i].recursions = st.recursions;
		s->probes[i].recorded = st.recorded;
		s->probes[i].mem_errors = st.mem_errors;
	}
	dpa_trap_stats(&ts);
	s->traps_ours = ts.ours;
	s->traps_chained = ts.chained;
	s->traps_reasserted = ts.reasserted;
	free(ptrs);
	return 0;
}

static void state_free(struct dp_app_state *s)
{
	free(s->probes);
	free(s->patches);
	memset(s, 0, sizeof(*s));
}

/* ---- requests --------------------------------------------------------- */

/* Fills a failed reply; returns the status. */
static int set_error(struct dp_app_result *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_error(struct dp_app_result *r, int status, const char *fmt, ...)
{
	va_list ap;

	r->status = status;
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	return status;
}

static int do_define_probe(const struct dp_app_define_probe *d, struct dp_app_result *r)
{
	struct dpa_probe *probe;
	struct dp_err err = DP_ERR_INIT;
	unsigned flags = 0;
	bool exists, full;
	int ret;

	pthread_mutex_lock(&ctl.lock);
	exists = probe_find(d->id) != NULL;
	full = ctl.nprobes >= ctl.max_probes;
	pthread_mutex_unlock(&ctl.lock);
	if (exists)
		return set_error(r, -EEXIST, "probe %u is already defined", d->id);
	if (full)
		return set_error(r, -ENOSPC, "%u probes already defined", ctl.max_probes);

	if (d->flags & DP_APP_PROBE_AT_ENTRY)
		flags |= DPA_PROBE_AT_ENTRY;
	errno = 0;
	probe = dpa_probe_new(d->site, d->event, flags, d->ctx, d->nctx, &err);
	if (!probe) {
		ret = errno ? -errno : -EINVAL;
		return set_error(r, ret, "%s", err.msg[0] ? err.msg : err_text(ret));
	}

	pthread_mutex_lock(&ctl.lock);
	ret = DP_ARRAY_RESERVE(ctl.probes, ctl.probes_cap, ctl.nprobes, 16);
	if (!ret)
		ret = dp_u64map_put(&ctl.probe_ix, d->id, ctl.nprobes);
	if (!ret) {
		struct probe_rec *rec = &ctl.probes[ctl.nprobes++];

		memset(rec, 0, sizeof(*rec));
		rec->info.id = d->id;
		rec->info.site = d->site;
		rec->info.flags = d->flags;
		memcpy(rec->info.event, d->event, sizeof(rec->info.event));
		rec->probe = probe;
	}
	pthread_mutex_unlock(&ctl.lock);
	/* A probe that could not be recorded is never reachable: no trampoline
	 * knows its address yet.  Probes are never freed (probe.h). */
	if (ret)
		return set_error(r, ret, "no memory to record probe %u", d->id);
	r->value = (uint64_t)(uintptr_t)probe;
	return 0;
}

/* DPA_CONTROL_ENV_TEST_CODE_FAIL: whether this ALLOC_CODE (counted under
 * ctl.lock) is one to fail. */
static bool test_code_fail(void)
{
	static unsigned long served;
	const char *v = secure_getenv(DPA_CONTROL_ENV_TEST_CODE_FAIL);
	unsigned long first, count = 1;

	served++;
	if (!v || sscanf(v, "%lu:%lu", &first, &count) < 1 || !first)
		return false;
	return served >= first && served - first < count;
}

static int do_alloc_code(const struct dp_app_alloc_code *a, struct dp_app_result *r)
{
	uint64_t addr = 0;
	int ret = 0;

	/* Under the lock: the pool reads /proc/self/maps (a descriptor a fork
	 * must not copy half-way) and maps memory. */
	pthread_mutex_lock(&ctl.lock);
	if (!ctl.pool) {
		ctl.pool = dp_code_pool_new();
		if (!ctl.pool)
			ret = -errno;
	}
	if (!ret)
		ret = test_code_fail() ? -ENOMEM : dp_code_pool_alloc(ctl.pool, a->near, a->size,
								      &addr);
	pthread_mutex_unlock(&ctl.lock);
	if (ret)
		return set_error(r, ret, "no code memory of %u bytes within 2 GiB of 0x%llx: %s",
				 a->size, (unsigned long long)a->near, err_text(ret));
	r->value = addr;
	return 0;
}

static int do_note_installed(const struct dp_app_patch *p, struct dp_app_result *r)
{
	struct dpa_probe *probes[DP_APP_MAX_PATCH_PROBES];
	struct dp_app_patch *old;
	bool was_int3 = false, replaced = false;
	uint32_t missing = 0;
	int ret = 0;

	pthread_mutex_lock(&ctl.lock);
	for (uint32_t i = 0; i < p->nprobes && !missing; i++) {
		struct probe_rec *rec = probe_find(p->probes[i]);

		if (rec)
			probes[i] = rec->probe;
		else
			missing = p->probes[i];
	}
	old = patch_find(p->site);
	if (old)
		was_int3 = old->method == DP_APP_METHOD_INT3;
	else if (ctl.npatches >= DP_APP_MAX_PATCHES)
		ret = -ENOSPC;
	pthread_mutex_unlock(&ctl.lock);
	if (missing)
		return set_error(r, -ENOENT, "no probe %u", missing);
	if (ret)
		return set_error(r, ret, "%u patches already recorded", DP_APP_MAX_PATCHES);

	/* The trap site first: the daemon writes the int3 only after this
	 * reply, and a trap nobody knows would reach the program. */
	if (p->method == DP_APP_METHOD_INT3) {
		ret = dpa_trap_add(p->site, p->resume, probes, p->nprobes);
		if (ret)
			return set_error(r, ret, "cannot register the int3 site 0x%llx: %s",
					 (unsigned long long)p->site, err_text(ret));
	}

	pthread_mutex_lock(&ctl.lock);
	old = patch_find(p->site);
	if (old) {
		/* The daemon rebuilt the patch (more probes, another method). */
		ctl.nint3 -= old->method == DP_APP_METHOD_INT3;
		*old = *p;
		replaced = true;
	} else {
		ret = DP_ARRAY_RESERVE(ctl.patches, ctl.patches_cap, ctl.npatches, 16);
		if (!ret)
			ret = dp_u64map_put(&ctl.patch_ix, p->site, ctl.npatches);
		if (!ret)
			ctl.patches[ctl.npatches++] = *p;
	}
	if (!ret)
		ctl.nint3 += p->method == DP_APP_METHOD_INT3;
	pthread_mutex_unlock(&ctl.lock);
	if (ret) {
		if (p->method == DP_APP_METHOD_INT3)
			dpa_trap_remove(p->site);
		return set_error(r, ret, "no memory to record the patch at 0x%llx",
				 (unsigned long long)p->site);
	}
	/* An int3 the daemon replaced with a jump: traps already taken still
	 * find their way (dpa_trap_remove keeps the resume address). */
	if (replaced && was_int3 && p->method != DP_APP_METHOD_INT3)
		dpa_trap_remove(p->site);
	return 0;
}

/* The led recorded at site, or NULL (with the lock). */
static struct dp_app_led *led_find(uint64_t site)
{
	for (uint32_t i = 0; i < ctl.nleds; i++)
		if (ctl.leds[i].patch.site == site)
			return &ctl.leds[i];
	return NULL;
}

/* Forgets the led at site (with the lock): whether there was one. */
static bool led_forget(uint64_t site)
{
	struct dp_app_led *l = led_find(site);

	if (!l)
		return false;
	*l = ctl.leds[--ctl.nleds];
	return true;
}

/* NOTE_WRITES: each led recorded in place of the one at its site (or, with
 * no write, that one forgotten), in order; r->value counts those done. */
static int do_note_writes(const struct dp_app_leds *m, struct dp_app_result *r)
{
	int ret = 0;

	pthread_mutex_lock(&ctl.lock);
	for (uint32_t i = 0; i < m->nleds && !ret; i++) {
		const struct dp_app_led *l = &m->leds[i];
		struct dp_app_led *old = led_find(l->patch.site);

		if (!l->nwrites) {
			led_forget(l->patch.site);
		} else if (old) {
			*old = *l;
		} else if (ctl.nleds >= DP_APP_MAX_PATCHES) {
			ret = set_error(r, -ENOSPC, "%u leds already recorded", DP_APP_MAX_PATCHES);
		} else if (DP_ARRAY_RESERVE(ctl.leds, ctl.leds_cap, ctl.nleds, 16)) {
			ret = set_error(r, -ENOMEM, "no memory to record the led at 0x%llx",
					(unsigned long long)l->patch.site);
		} else {
			ctl.leds[ctl.nleds++] = *l;
		}
		if (!ret)
			r->value = i + 1;
	}
	pthread_mutex_unlock(&ctl.lock);
	return ret;
}

/* LIST_WRITES: a copy of every led (to free). */
static int leds_snapshot(struct dp_app_leds *out)
{
	int ret = 0;

	pthread_mutex_lock(&ctl.lock);
	out->nleds = ctl.nleds;
	out->leds = calloc(ctl.nleds ? ctl.nleds : 1, sizeof(*out->leds));
	if (out->leds)
		memcpy(out->leds, ctl.leds, ctl.nleds * sizeof(*out->leds));
	else
		ret = -ENOMEM;
	pthread_mutex_unlock(&ctl.lock);
	return ret;
}

static int do_note_removed(uint64_t site, struct dp_app_result *r)
{
	bool led;

	struct dp_app_patch *p;
	bool int3 = false;

	pthread_mutex_lock(&ctl.lock);
	led = led_forget(site);
	p = patch_find(site);
	if (p) {
		int3 = p->method == DP_APP_METHOD_INT3;
		ctl.nint3 -= int3;
		uint32_t at = (uint32_t)(p - ctl.patches);

		/* Keep the order: reports list patches as they were installed.
		 * The ones after it move down one place, and so do their
		 * indexes (a table never grows here: this cannot fail). */
		memmove(p, p + 1, (size_t)(ctl.patches + ctl.npatches - (p + 1)) * sizeof(*p));
		ctl.npatches--;
		dp_u64map_put(&ctl.patch_ix, site, UINT32_MAX);
		for (uint32_t i = at; i < ctl.npatches; i++)
			dp_u64map_put(&ctl.patch_ix, ctl.patches[i].site, i);
	}
	pthread_mutex_unlock(&ctl.lock);
	if (!p && !led)
		return set_error(r, -ENOENT, "no patch at 0x%llx", (unsigned long long)site);
	/* The daemon put the original bytes back before telling us (probe.h's
	 * order), so no new trap can come from this site. */
	if (int3)
		dpa_trap_remove(site);
	return 0;
}

/* DEFINE_PROBES: each probe as DEFINE_PROBE_EXT would define it, in order,
 * up to the first that fails. */
static int do_define_probes(const struct dp_app_define_probes *d,
			    struct dp_app_define_probes_reply *r)
{
	r->handles = calloc(d->nprobes, sizeof(*r->handles));
	if (!r->handles) {
		r->status = -ENOMEM;
		snprintf(r->error, sizeof(r->error), "no memory for %u probes", d->nprobes);
		return r->status;
	}
	for (uint32_t i = 0; i < d->nprobes; i++) {
		const struct dp_app_probe_def *p = &d->probes[i];
		const struct dp_app_probe_class *c = &d->classes[p->cls];
		struct dp_app_define_probe one = {
			.id = p->id, .site = p->site, .flags = c->flags, .nctx = c->nctx,
			.ctx = c->ctx,
		};
		struct dp_app_result res = { 0 };

		memcpy(one.event, c->event, sizeof(one.event));
		if (do_define_probe(&one, &res)) {
			r->status = res.status;
			snprintf(r->error, sizeof(r->error), "probe %u (%.64s at 0x%llx): %.150s",
				 p->id, c->event, (unsigned long long)p->site, res.error);
			return r->status;
		}
		r->handles[r->nhandles++] = res.value;
	}
	return 0;
}

/* NOTE_INSTALLED_MANY: each patch as NOTE_INSTALLED would note it, in
 * order, up to the first that fails; r->value counts those noted. */
static int do_note_installed_many(const struct dp_app_patches *m, struct dp_app_result *r)
{
	for (uint32_t i = 0; i < m->npatches; i++) {
		struct dp_app_result one = { 0 };

		if (do_note_installed(&m->patches[i], &one)) {
			set_error(r, one.status, "the patch at 0x%llx (%u of %u): %s",
				  (unsigned long long)m->patches[i].site, i + 1, m->npatches,
				  one.error);
			r->value = i;
			return r->status;
		}
	}
	r->value = m->npatches;
	return 0;
}

/* NOTE_REMOVED_MANY: the records of these sites dropped in one pass (the
 * others keep their order), then their traps.  Sites not recorded fail the
 * reply, after the others are dropped. */
static int do_note_removed_many(const struct dp_app_sites *m, struct dp_app_result *r)
{
	uint64_t *traps = calloc(m->nsites, sizeof(*traps)), unknown_site = 0;
	uint8_t *drop;
	uint32_t ntraps = 0, unknown = 0, k = 0;

	pthread_mutex_lock(&ctl.lock);
	drop = calloc(ctl.npatches ? ctl.npatches : 1, 1);
	if (!traps || !drop) {
		pthread_mutex_unlock(&ctl.lock);
		free(traps);
		free(drop);
		return set_error(r, -ENOMEM, "no memory to forget %u patches", m->nsites);
	}
	for (uint32_t i = 0; i < m->nsites; i++) {
		uint32_t at;

		bool led = led_forget(m->sites[i]);

		if (!dp_u64map_get(&ctl.patch_ix, m->sites[i], &at) || at == UINT32_MAX ||
		    drop[at]) {
			if (led)
				continue;
			if (!unknown++)
				unknown_site = m->sites[i];
			continue;
		}
		drop[at] = 1;
		if (ctl.patches[at].method == DP_APP_METHOD_INT3) {
			ctl.nint3--;
			traps[ntraps++] = m->sites[i];
		}
	}
	for (uint32_t i = 0; i < ctl.npatches; i++)
		if (!drop[i])
			ctl.patches[k++] = ctl.patches[i];
	ctl.npatches = k;
	if (patch_ix_rebuild())
		dbg("no memory to index the patches");
	pthread_mutex_unlock(&ctl.lock);
	/* The original bytes are back (probe.h's order): no new trap comes
	 * from these sites. */
	for (uint32_t i = 0; i < ntraps; i++)
		dpa_trap_remove(traps[i]);
	free(traps);
	free(drop);
	if (unknown)
		return set_error(r, -ENOENT, "%u of the %u sites have no patch (the first: 0x%llx)",
				 unknown, m->nsites, (unsigned long long)unknown_site);
	return 0;
}

/* Sends m, if the descriptor is still ours.  0 or -errno. */
static int reply(int fd, const struct dp_app_msg *m)
{
	int ret;

	if (!fd_is_ours(fd))
		return -EBADF;
	pthread_mutex_lock(&send_lock);
	ret = dp_app_send(fd, m, DP_APP_TIMEOUT_MS);
	pthread_mutex_unlock(&send_lock);
	if (ret)
		dbg("cannot send %s: %s", dp_app_type_name(m->type), err_text(ret));
	return ret;
}

/* Answers one well-formed request.  0, or -errno when the connection is lost. */
static int serve_one(int fd, const struct dp_app_msg *req)
{
	struct dp_app_msg rep = { .type = req->type | DP_FRAME_REPLY, .seq = req->seq };
	int ret;

	switch (req->type) {
	case DP_APP_DEFINE_PROBE:
	case DP_APP_DEFINE_PROBE_EXT:
		do_define_probe(&req->define_probe, &rep.result);
		dbg("%s %u %s at 0x%llx: %s", dp_app_type_name(req->type), req->define_probe.id,
		    req->define_probe.event, (unsigned long long)req->define_probe.site,
		    rep.result.status ? rep.result.error : "ok");
		break;
	case DP_APP_ALLOC_CODE:
		do_alloc_code(&req->alloc_code, &rep.result);
		dbg("ALLOC_CODE %u near 0x%llx: %s 0x%llx", req->alloc_code.size,
		    (unsigned long long)req->alloc_code.near,
		    rep.result.status ? rep.result.error : "ok",
		    (unsigned long long)rep.result.value);
		break;
	case DP_APP_NOTE_INSTALLED:
		do_note_installed(&req->note_installed, &rep.result);
		dbg("NOTE_INSTALLED 0x%llx: %s", (unsigned long long)req->note_installed.site,
		    rep.result.status ? rep.result.error : "ok");
		break;
	case DP_APP_NOTE_REMOVED:
		do_note_removed(req->note_removed, &rep.result);
		dbg("NOTE_REMOVED 0x%llx: %s", (unsigned long long)req->note_removed,
		    rep.result.status ? rep.result.error : "ok");
		break;
	case DP_APP_DEFINE_PROBES:
		do_define_probes(&req->define_probes, &rep.define_probes_reply);
		dbg("DEFINE_PROBES %u (%u classes): %u defined%s%s", req->define_probes.nprobes,
		    req->define_probes.nclasses, rep.define_probes_reply.nhandles,
		    rep.define_probes_reply.status ? ": " : "", rep.define_probes_reply.error);
		ret = reply(fd, &rep);
		free(rep.define_probes_reply.handles);
		return ret;
	case DP_APP_NOTE_INSTALLED_MANY:
		do_note_installed_many(&req->note_many, &rep.result);
		dbg("NOTE_INSTALLED_MANY %u: %s", req->note_many.npatches,
		    rep.result.status ? rep.result.error : "ok");
		break;
	case DP_APP_NOTE_REMOVED_MANY:
		do_note_removed_many(&req->removed_many, &rep.result);
		dbg("NOTE_REMOVED_MANY %u: %s", req->removed_many.nsites,
		    rep.result.status ? rep.result.error : "ok");
		break;
	case DP_APP_NOTE_WRITES:
		do_note_writes(&req->leds, &rep.result);
		dbg("NOTE_WRITES %u: %s", req->leds.nleds,
		    rep.result.status ? rep.result.error : "ok");
		break;
	case DP_APP_LIST_WRITES:
		ret = leds_snapshot(&rep.leds);
		if (ret)
			return ret;	/* no status: let the daemon retry */
		ret = reply(fd, &rep);
		free(rep.leds.leds);
		return ret;
	case DP_APP_LIST:
		ret = state_snapshot(&rep.list_reply);
		if (ret)
			return ret;	/* the reply has no status: let the daemon retry */
		ret = reply(fd, &rep);
		state_free(&rep.list_reply);
		return ret;
	case DP_APP_PING:
		rep.ping = req->ping;
		break;
	case DP_APP_GO:
		/* Answered first: the daemon waits for the reply, not for the
		 * program to run. */
		ret = reply(fd, &rep);
		dbg("GO");
		go_release("the daemon's GO");
		return ret;
	case DP_APP_FOLLOW:
		ret = dpa_follow_set(req->follow);
		if (ret)
			set_error(&rep.result, ret, "the agent does not know its own path: it "
				  "cannot follow the images the process executes");
		dbg("FOLLOW 0x%x: %s", req->follow, ret ? rep.result.error : "ok");
		break;
	case DP_APP_MAPPED_REPLY:
		/* Our own request's answer: nothing to send back. */
		dbg("MAPPED_REPLY %llu", (unsigned long long)req->mapped);
		mapped_release(req->mapped);
		return 0;
	default:
		/* Known to the codec, but not a request an agent serves. */
		rep = (struct dp_app_msg){
			.type = DP_APP_UNSUPPORTED, .seq = req->seq, .unsupported = req->type,
		};
		break;
	}
	return reply(fd, &rep);
}

/*
 * A request that framed well but did not decode.  Replies that carry a
 * status say why; the others cannot, and the connection is dropped.
 */
static int serve_bad(int fd, const struct dp_app_msg *req, enum dp_proto_err why)
{
	struct dp_app_msg rep = { .type = req->type | DP_FRAME_REPLY, .seq = req->seq };

	dbg("bad %s request (type 0x%04x): %s",
	    dp_app_type_name(req->type) ? dp_app_type_name(req->type) : "unknown", req->type,
	    dp_proto_err_str(why));
	if (dp_app_type_is_reply(req->type))
		return 0;	/* nothing asked, nothing to answer */
	switch (req->type) {
	case DP_APP_DEFINE_PROBE:
	case DP_APP_DEFINE_PROBE_EXT:
	case DP_APP_ALLOC_CODE:
	case DP_APP_NOTE_INSTALLED:
	case DP_APP_NOTE_REMOVED:
	case DP_APP_NOTE_INSTALLED_MANY:
	case DP_APP_NOTE_REMOVED_MANY:
	case DP_APP_FOLLOW:
	case DP_APP_NOTE_WRITES:
		set_error(&rep.result, -EBADMSG, "%s", dp_proto_err_str(why));
		return reply(fd, &rep);
	case DP_APP_DEFINE_PROBES:
		rep.define_probes_reply.status = -EBADMSG;
		snprintf(rep.define_probes_reply.error, sizeof(rep.define_probes_reply.error),
			 "%s", dp_proto_err_str(why));
		return reply(fd, &rep);
	default:
		if (why != DP_PROTO_ERR_TYPE)
			return -EBADMSG;
		rep = (struct dp_app_msg){
			.type = DP_APP_UNSUPPORTED, .seq = req->seq, .unsupported = req->type,
		};
		return reply(fd, &rep);
	}
}

static bool have_int3(void)
{
	bool any;

	pthread_mutex_lock(&ctl.lock);
	any = ctl.nint3 > 0;
	pthread_mutex_unlock(&ctl.lock);
	return any;
}

/* Serves requests until the connection ends. */
static void serve(int fd)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct dp_app_msg req;
		enum dp_proto_err why;
		int n, ret;

		n = poll(&pfd, 1, have_int3() ? TRAP_CHECK_MS : -1);
		if (stopping() || (n < 0 && errno != EINTR))
			return;
		if (n <= 0) {
			if (have_int3())
				dpa_trap_check();
			continue;
		}
		if ((pfd.revents & POLLNVAL) || !fd_is_ours(fd)) {
			dbg("the connection was closed by the program");
			return;
		}
		ret = dp_app_recv(fd, &req, DP_APP_TIMEOUT_MS, &why);
		if (ret == -EPROTO && !dp_proto_err_fatal(why))
			ret = serve_bad(fd, &req, why);
		else if (ret == -EPROTO)
			dbg("closing: %s (protocol %u.%u, ours %u.%u)", dp_proto_err_str(why),
			    req.major, req.minor, DP_APP_MAJOR, DP_APP_MINOR);
		else if (ret == 0)
			ret = serve_one(fd, &req);
		else
			dbg("connection lost: %s", err_text(ret));
		dp_app_msg_release(&req);
		if (ret)
			return;
	}
}

/*
 * How long HELLO's reply is waited for: DP_APP_TIMEOUT_MS, or longer while
 * the constructor waits for GO with a longer limit of its own (not
 * NO_LIMIT, which ends when no daemon answers): a daemon slow to answer on
 * a loaded machine must not end the program's wait before its time (the
 * failed connection releases it, and main would run unprobed).
 */
static int hello_wait_ms(void)
{
	unsigned ms = ctl.wait_ms;
	bool waiting;

	pthread_mutex_lock(&go.lock);
	waiting = !go.released;
	pthread_mutex_unlock(&go.lock);
	if (!waiting || ms == NO_LIMIT || ms <= DP_APP_TIMEOUT_MS)
		return DP_APP_TIMEOUT_MS;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* HELLO and its reply.  0, -ECONNREFUSED when the daemon will not talk to
 * us (or we to it), or -errno. */
static int handshake(int fd)
{
	struct dp_app_msg m = { .type = DP_APP_HELLO };
	struct dp_app_msg rep;
	enum dp_proto_err why;
	int ret;

	m.seq = ++ctl.seq;
	m.hello.major = DP_APP_MAJOR;
	m.hello.minor = ctl.minor;
	m.hello.pid = (uint32_t)getpid();
	m.hello.probe_hit = (uint64_t)(uintptr_t)&dp_probe_hit;
#ifdef PACKAGE_VERSION
	snprintf(m.hello.agent_version, sizeof(m.hello.agent_version), "%s", PACKAGE_VERSION);
#endif
	ret = state_snapshot(&m.hello.state);
	if (ret)
		return ret;
	ret = dp_app_send(fd, &m, DP_APP_TIMEOUT_MS);
	dbg("HELLO: %u probes, %u patches: %s", m.hello.state.nprobes, m.hello.state.npatches,
	    ret ? err_text(ret) : "sent");
	state_free(&m.hello.state);
	if (ret)
		return ret;

	ret = dp_app_recv(fd, &rep, hello_wait_ms(), &why);
	if (!ret && rep.type == DP_APP_REFUSE) {
		dbg("the daemon refused us (its protocol %u.%u, ours %u.%u): %s", rep.refuse.major,
		    rep.refuse.minor, DP_APP_MAJOR, DP_APP_MINOR, rep.refuse.reason);
		ret = -ECONNREFUSED;
	} else if (ret == -EPROTO && why == DP_PROTO_ERR_VERSION) {
		struct dp_app_msg no = { .type = DP_APP_REFUSE, .seq = rep.seq };

		no.refuse.major = DP_APP_MAJOR;
		no.refuse.minor = DP_APP_MINOR;
		snprintf(no.refuse.reason, sizeof(no.refuse.reason),
			 "agent of pid %d speaks protocol %u.%u, the daemon %u.%u", (int)getpid(),
			 DP_APP_MAJOR, DP_APP_MINOR, rep.major, rep.minor);
		dbg("%s", no.refuse.reason);
		dp_app_send(fd, &no, DP_APP_TIMEOUT_MS);
		ret = -ECONNREFUSED;
	} else if (ret == -EPROTO) {
		dbg("bad reply to HELLO: %s", dp_proto_err_str(why));
	} else if (!ret && (rep.type != DP_APP_HELLO_REPLY || rep.seq != m.seq)) {
		dbg("unexpected reply to HELLO: type 0x%04x seq %u", rep.type, rep.seq);
		ret = -EPROTO;
	} else if (!ret) {
		dbg("connected to the daemon (pid %u, protocol %u.%u)", rep.hello_reply.daemon_pid,
		    rep.hello_reply.major, rep.hello_reply.minor);
		__atomic_store_n(&ctl.daemon_minor, rep.hello_reply.minor, __ATOMIC_RELAXED);
	}
	dp_app_msg_release(&rep);
	return ret;
}

/*
 * Sleeps ms milliseconds, checking the SIGTRAP handler meanwhile while int3
 * sites exist.  false when woken early (EINTR): try again now.
 */
static bool nap(unsigned ms)
{
	while (ms) {
		unsigned step = have_int3() && ms > TRAP_CHECK_MS ? TRAP_CHECK_MS : ms;
		struct timespec ts = { .tv_sec = step / 1000, .tv_nsec = (long)(step % 1000) * 1000000 };

		if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
			return false;
		if (have_int3())
			dpa_trap_check();
		ms -= step;
	}
	return true;
}

static void *control_main(void *arg)
{
	unsigned delay = DPA_CONTROL_RETRY_FIRST_MS;

	pthread_setname_np(pthread_self(), THREAD_NAME);
	in_control_thread = true;
	while (!stopping()) {
		int fd = conn_open();

		if (fd >= 0) {
			int ret = handshake(fd);

			if (!ret) {
				delay = DPA_CONTROL_RETRY_FIRST_MS;
				__atomic_store_n(&ctl.serving, true, __ATOMIC_RELEASE);
				serve(fd);
				serving_end();
				/* What the daemon asked ends with the connection:
				 * it forgets what it told us when we say HELLO
				 * again, and tells us anew after its installs. */
				dpa_follow_set(0);
				dbg("disconnected from the daemon");
			}
			/* Whatever happened, a waiting constructor has nothing
			 * more to wait for: the program must not hang on us. */
			go_release(ret ? "the daemon did not take our HELLO" :
					 "the connection to the daemon ended");
			if (ret == -ECONNREFUSED) {
				/* It will not change its mind soon. */
				delay = DPA_CONTROL_RETRY_MAX_MS;
			}
			conn_close();
			if (stopping())
				break;
		} else {
			dbg("cannot connect to %s: %s (next attempt in %u ms)", ctl.path,
			    err_text(fd), delay);
			go_release("no daemon to connect to");
		}
		if (!nap(delay)) {
			delay = DPA_CONTROL_RETRY_FIRST_MS;
			continue;
		}
		delay = delay * 2 > DPA_CONTROL_RETRY_MAX_MS ? DPA_CONTROL_RETRY_MAX_MS : delay * 2;
	}
	return NULL;
}

/*
 * Starts the thread with the program's signals blocked from its first
 * instruction on: a signal meant for the program never runs its handler
 * here.  Not the synchronous ones: the kernel forces those through a mask
 * by resetting their handler, which would turn an int3 site reached from
 * this thread (a probe on memcpy) into the death of the process.
 */
static int thread_spawn(void)
{
	static const int sync_signals[] = { SIGTRAP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS };
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	sigfillset(&all);
	for (size_t i = 0; i < sizeof(sync_signals) / sizeof(sync_signals[0]); i++)
		sigdelset(&all, sync_signals[i]);
	ret = pthread_attr_init(&attr);
	if (ret)
		return -ret;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&t, &attr, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (ret) {
		dbg("cannot start the control thread: %s", err_text(ret));
		return -ret;
	}
	return 0;
}

/* ctl.lock, then go.lock (no one holds go.lock while it takes ctl.lock),
 * so that the child gets neither held by a thread that is not there.
 * send_lock is not taken: a send may wait for the daemon, and fork must
 * not; the child makes it anew. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&ctl.lock);
	pthread_mutex_lock(&go.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&go.lock);
	pthread_mutex_unlock(&ctl.lock);
}

static void atfork_child(void)
{
	/* The forking thread holds the lock; the control thread does not
	 * exist here.  Start afresh, keeping the tables: the child inherited
	 * the patches and probes, and will report them under its own pid. */
	pthread_mutex_init(&ctl.lock, NULL);
	pthread_mutex_init(&send_lock, NULL);
	/* The constructor's waiters are the parent's: the child's wait
	 * state (GO, MAPPED) starts as the parent left it, its lock and
	 * condition new. */
	pthread_mutex_init(&go.lock, NULL);
	pthread_cond_init(&go.cond, NULL);
	ctl.serving = false;
	if (fd_is_ours(ctl.fd))
		close(ctl.fd);
	ctl.fd = -1;
	ctl.seq = 0;
	if (!stopping())
		thread_spawn();
}

static bool env_flag(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

/* A number from the environment below `max` (tests' limits), else max. */
static unsigned env_below(const char *name, unsigned max)
{
	const char *v = secure_getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return max;
	errno = 0;
	n = strtoul(v, &end, 10);
	return errno || *end || n >= max ? max : (unsigned)n;
}

/*
 * Parses a wait in milliseconds: 0 for none, -1 for no limit (NO_LIMIT), or
 * a positive number; dflt for anything else.
 */
static unsigned wait_ms_parse(const char *name, const char *v, unsigned dflt)
{
	char *end;
	long ms;

	errno = 0;
	ms = strtol(v, &end, 10);
	if (errno || end == v || *end || ms < -1 || ms > 3600000) {
		dbg("%s=%s is not a wait in milliseconds (0 to 3600000, or -1 for no limit): "
		    "%u ms instead", name, v, dflt);
		return dflt;
	}
	return ms == -1 ? NO_LIMIT : (unsigned)ms;
}

/* The wait from the environment variable `name` (dflt when unset),
 * said in a debug line with where it came from. */
static unsigned wait_ms_read(const char *name, unsigned dflt)
{
	const char *v = secure_getenv(name);
	unsigned ms = v && *v ? wait_ms_parse(name, v, dflt) : dflt;
	const char *from = v && *v ? name : "the default";

	if (ms == 0)
		dbg("main does not wait for the daemon's GO (%s: 0 ms)", from);
	else if (ms == NO_LIMIT)
		dbg("main waits for the daemon's GO without a limit (%s: -1)", from);
	else
		dbg("main waits for the daemon's GO %u ms at most (%s)", ms, from);
	return ms;
}

/*
 * How long the constructor waits for GO: not at all in an injected agent,
 * whose constructor runs inside dlopen in the thread the injection created
 * (proc/inject.h), never in the process's main thread: waiting there would
 * hold the loader's lock (every dlopen of the program) while the daemon
 * installs, and the program runs meanwhile anyway.  Else
 * DP_APP_ENV_WAIT when `lttng trace` set it, else
 * DPA_CONTROL_ENV_REGISTER_TIMEOUT, else DPA_CONTROL_REGISTER_TIMEOUT_MS.
 */
static unsigned wait_ms_from_env(void)
{
	const char *v;

	if (gettid() != getpid()) {
		dbg("loaded by a thread other than the main one: no wait for the daemon");
		return 0;
	}
	v = secure_getenv(DP_APP_ENV_WAIT);
	if (v && *v)
		return wait_ms_read(DP_APP_ENV_WAIT, DP_APP_WAIT_DEFAULT_MS);
	return wait_ms_read(DPA_CONTROL_ENV_REGISTER_TIMEOUT, DPA_CONTROL_REGISTER_TIMEOUT_MS);
}

/*
 * Waits on go.cond (go.lock held) for a slice of the deadline d at most:
 * false once d has passed.  The time this process could not run is not
 * counted (deadline.h): a program its machine stopped while it waited for
 * GO still waits its time after.
 */
static bool go_cond_wait(struct dp_deadline *d)
{
	int slice = dp_deadline_slice(d);
	struct timespec until;

	if (!slice)
		return false;
	if (slice < 0) {
		pthread_cond_wait(&go.cond, &go.lock);
		return true;
	}
	clock_gettime(CLOCK_REALTIME, &until);	/* go.cond's clock */
	until.tv_nsec += (long)slice * 1000000;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&go.cond, &go.lock, &until);
	return true;
}

/* A deadline of ms (NO_LIMIT: none). */
static void go_deadline(struct dp_deadline *d, unsigned ms)
{
	dp_deadline_start(d, ms == NO_LIMIT ? -1 : ms > INT_MAX ? INT_MAX : (int)ms, NULL);
}

/* Holds the caller (the constructor) until GO, or at most ms milliseconds
 * (NO_LIMIT: until GO, or until no daemon answers). */
static void go_wait(unsigned ms)
{
	int64_t t0 = dp_now_ms();
	struct dp_deadline d;
	const char *why = NULL;

	go_deadline(&d, ms);
	pthread_mutex_lock(&go.lock);
	while (!go.released) {
		if (!go_cond_wait(&d)) {
			dbg("no GO from the daemon within %u ms: running anyway", ms);
			break;
		}
	}
	if (go.released)
		why = go.why;
	pthread_mutex_unlock(&go.lock);
	if (why)
		dbg("main goes on after %lld ms: %s", (long long)(dp_now_ms() - t0), why);
}

int dpa_control_start(void)
{
	unsigned wait_ms;
	int ret;

	pthread_mutex_lock(&ctl.lock);
	if (ctl.started) {
		pthread_mutex_unlock(&ctl.lock);
		return 0;
	}
	ctl.started = true;
	pthread_mutex_unlock(&ctl.lock);

	/* The environment is read once, here, from the constructor: later
	 * threads of the program may be changing it. */
	ctl.debug = env_flag(DPA_CONTROL_ENV_DEBUG);
	ctl.max_probes = env_below(DPA_CONTROL_ENV_MAX_PROBES, DP_APP_MAX_PROBES);
	ctl.minor = (uint8_t)env_below(DPA_CONTROL_ENV_MINOR, DP_APP_MINOR);
	ret = dp_app_socket_path(ctl.path, sizeof(ctl.path));
	if (ret) {
		dbg("no app socket path (%s): staying inert", err_text(ret));
		return ret;
	}
	if (!ctl.atfork_done) {
		ret = pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		if (ret) {
			dbg("pthread_atfork: %s", err_text(ret));
			return -ret;
		}
		ctl.atfork_done = true;
	}
	wait_ms = wait_ms_from_env();
	ctl.wait_ms = wait_ms;
	ret = thread_spawn();
	/* The path-wide probes (and those of lttng trace) go in before the
	 * program's main runs. */
	if (!ret && wait_ms)
		go_wait(wait_ms);
	return ret;
}

bool dpa_control_mapped_wanted(void)
{
	return !in_control_thread && ctl.wait_ms && !stopping() && __atomic_load_n(&ctl.serving, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&ctl.daemon_minor, __ATOMIC_RELAXED) >= 2;
}

void dpa_control_mapped_wait(void)
{
	struct dp_app_msg m = { .type = DP_APP_MAPPED };
	struct dp_deadline d;
	uint64_t cookie, ended;
	int fd, ret;

	if (!dpa_control_mapped_wanted())
		return;
	pthread_mutex_lock(&ctl.lock);
	fd = ctl.fd;
	pthread_mutex_unlock(&ctl.lock);
	pthread_mutex_lock(&go.lock);
	cookie = ++go.mapped_sent;
	ended = go.ended;
	pthread_mutex_unlock(&go.lock);

	m.seq = (uint32_t)cookie;
	m.mapped = cookie;
	pthread_mutex_lock(&send_lock);
	ret = fd_is_ours(fd) ? dp_app_send(fd, &m, DP_APP_TIMEOUT_MS) : -EBADF;
	pthread_mutex_unlock(&send_lock);
	if (ret) {
		dbg("cannot send MAPPED: %s", err_text(ret));
		return;
	}
	dbg("MAPPED %llu: waiting for the daemon", (unsigned long long)cookie);
	go_deadline(&d, ctl.wait_ms);
	pthread_mutex_lock(&go.lock);
	while (go.mapped_done < cookie && go.ended == ended) {
		if (!go_cond_wait(&d)) {
			dbg("no MAPPED_REPLY within %u ms: going on", ctl.wait_ms);
			break;
		}
	}
	pthread_mutex_unlock(&go.lock);
}

void dpa_control_stop(void)
{
	__atomic_store_n(&ctl.stopping, true, __ATOMIC_RELEASE);
	/* Wakes the thread out of poll() or a transfer; it closes the socket
	 * itself (closing it here could hand its number to someone else while
	 * the thread still uses it). */
	pthread_mutex_lock(&ctl.lock);
	if (fd_is_ours(ctl.fd))
		shutdown(ctl.fd, SHUT_RDWR);
	pthread_mutex_unlock(&ctl.lock);
}
