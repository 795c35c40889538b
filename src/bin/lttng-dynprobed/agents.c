/*
 * Agents: the processes whose agent talks to us over the app socket, what
 * each one holds (probes defined, patches written), and the requests we
 * make of them.
 *
 * The agent is the source of truth: its HELLO lists what is installed, so a
 * restarted daemon rebuilds a process's record from it and matches each
 * patch to the events that own it (by the event names of its probes; one
 * patch may serve several events).  A HELLO is served in two steps: the
 * record and HELLO_REPLY at once (also while an install waits for an
 * injected agent: it lends its hold on the process), then, in a job of its
 * own once the process's hold is free, the installs pending for that
 * process (the probes of `lttng trace`) and GO.
 *
 * A call to an agent lets the state lock go while it waits for the reply:
 * the caller holds the process, so the connection and the record are its
 * own meanwhile (lock.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "daemon.h"
#include "proc/maps.h"
#include "proc/proc-status.h"
#include "proto/codec.h"

/* How long the calls of a HELLO, or of a reconciliation, may take in all. */
#define DPD_RECONCILE_MS 10000

int dpd_app_listen_fd = -1;

/* While a HELLO is served (its leds, its reconciliation's notes): the end
 * of every call this thread makes, so that the HELLO, which an install may
 * wait for (dpd_agent_wait), ends by then however many calls it makes. */
static __thread int64_t calls_until;

void dpd_agent_close(struct dpd_proc *p)
{
	if (p->fd < 0)
		return;
	dpd_watch_clear(p->pid, p->fd);
	close(p->fd);
	p->fd = -1;
}

/* The agent connection is gone: forget the process if it exited, else wait
 * for the agent to reconnect (it will, and say HELLO again). */
static void conn_lost(struct dpd_proc *p)
{
	dpd_agent_close(p);
	if (!dp_proc_alive(p->pid))
		dpd_proc_forget(p);
	else
		dpd_info("agent of process %d disconnected; it will reconnect", (int)p->pid);
}

/* Whether a probe of the patch records one of ev's lttng names. */
static bool names_probe(struct dpd_proc *p, const struct dpd_event *ev,
			const struct dp_app_patch *ap)
{
	for (uint32_t i = 0; i < ap->nprobes; i++) {
		const struct dpd_probe *pr = dpd_proc_probe(p, ap->probes[i]);

		for (uint32_t k = 0; pr && k < ev->nnames; k++)
			if (!strcmp(ev->names[k], pr->event))
				return true;
	}
	return false;
}

/* ev's plan entries that are patches, by window address (then plan order):
 * a recovered process's patches are matched to them by binary search (a
 * walk of the plan for each made recovery quadratic). */
struct plan_ix {
	const struct dpd_event *ev;
	uint32_t *idx;
	size_t n;
};

static int plan_cmp(const void *a, const void *b, void *arg)
{
	const struct dp_patch *plan = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t ax = plan[x].win.addr, ay = plan[y].win.addr;

	if (ax != ay)
		return ax < ay ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int plan_ix_build(const struct dpd_event *ev, struct plan_ix *ix)
{
	ix->ev = ev;
	ix->n = 0;
	ix->idx = malloc((ev->nplan ? ev->nplan : 1) * sizeof(*ix->idx));
	if (!ix->idx)
		return -ENOMEM;
	for (size_t i = 0; i < ev->nplan; i++)
		if (ev->plan[i].method != DP_SITE_REFUSED)
			ix->idx[ix->n++] = (uint32_t)i;
	qsort_r(ix->idx, ix->n, sizeof(*ix->idx), plan_cmp, ev->plan);
	return 0;
}

/* What dpd_event_window answers: the first plan entry (in plan order) whose
 * window at bias is ap's. */
static const struct dp_patch *plan_ix_window(const struct plan_ix *ix, uint64_t bias,
					     const struct dp_app_patch *ap, const struct dpd_led *led)
{
	const struct dp_patch *plan = ix->ev->plan;
	uint64_t addr = ap->site - bias;
	size_t lo = 0, hi = ix->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (plan[ix->idx[mid]].win.addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ix->n && plan[ix->idx[lo]].win.addr == addr; lo++) {
		struct dp_app_patch w;
		struct dpd_led wl;

		dpd_patch_window(&plan[ix->idx[lo]], bias, &w);
		dpd_patch_led(&plan[ix->idx[lo]], ix->ev->obj->obj, bias, &wl);
		if (dpd_same_window(&w, &wl, ap, led))
			return &plan[ix->idx[lo]];
	}
	return NULL;
}

/* An event meant for p that may claim its recovered patches. */
static bool may_claim(const struct dpd_proc *p, const struct dpd_event *ev)
{
	/* By pid: its processes and their descendants (a forked child
	 * reports the patches it inherited). */
	bool listed = !ev->npids || dpd_event_reaches(ev, p->pid);

	return (!ev->owner || ev->owner == p->uid) && ev->enabled && ev->obj && listed;
}

/* Whether an owner of s serves probe pr (its event's point there). */
static bool probe_owned(const struct dpd_site *s, const struct dpd_probe *pr)
{
	for (uint32_t o = 0; o < s->nowners; o++) {
		const struct dpd_owner *ow = &s->owners[o];

		for (unsigned j = 0; j < ow->pl->npoints; j++) {
			const struct dpd_point *pt = &ow->ev->points[ow->pl->point_ids[j]];

			if (pt->vaddr + ow->bias == pr->site &&
			    !strcmp(dpd_event_point_name(ow->ev, pt), pr->event))
				return true;
		}
	}
	return false;
}

/* Whether every probe of recovered patch s is served by one of its owners. */
static bool hooks_owned(struct dpd_proc *p, const struct dpd_site *s)
{
	for (uint32_t i = 0; i < s->patch.nprobes; i++) {
		const struct dpd_probe *pr = dpd_proc_probe(p, s->patch.probes[i]);

		if (!pr || !probe_owned(s, pr))
			return false;
	}
	return s->nowners > 0;
}

/*
 * A joint plan being rebuilt from recovered patches (as combine.c made it):
 * the points their probes record, the patches taken in.
 */
struct joint {
	const struct dpd_object *obj;
	uint64_t bias;
	struct dpd_event **evs;		/* per member */
	uint32_t *ks;			/* its point in evs[i]->points */
	uint64_t *vaddrs;
	size_t n, cap;
	uint32_t *sites;		/* indexes in p->sites */
	size_t nsites, sites_cap;
};

/* Room for one more member: 0 or -ENOMEM. */
static int joint_grow(struct joint *j)
{
	uint32_t *ks;
	uint64_t *va;

	if (DP_ARRAY_RESERVE(j->evs, j->cap, j->n, 16))
		return -ENOMEM;
	/* The three arrays grow together (cap counts evs). */
	ks = realloc(j->ks, j->cap * sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	j->ks = ks;
	va = realloc(j->vaddrs, j->cap * sizeof(*va));
	if (!va)
		return -ENOMEM;
	j->vaddrs = va;
	return 0;
}

/* The member of j that probe pr is (added when new): its index, or -1 when
 * no event meant for p has that point (-2: out of memory). */
static long joint_member(struct joint *j, const struct dpd_proc *p, const struct dpd_probe *pr)
{
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		uint64_t bias;

		if (!may_claim(p, ev) || (j->obj && ev->obj != j->obj))
			continue;
		if (j->obj)
			bias = j->bias;
		else if (dpd_object_bias(ev->obj, p->pid, &bias))
			continue;
		for (uint32_t k = 0; k < ev->npoints; k++) {
			if (ev->points[k].vaddr + bias != pr->site ||
			    strcmp(dpd_event_point_name(ev, &ev->points[k]), pr->event))
				continue;
			for (size_t m = 0; m < j->n; m++)
				if (j->evs[m] == ev && j->ks[m] == k)
					return (long)m;
			if (joint_grow(j))
				return -2;
			j->obj = ev->obj;
			j->bias = bias;
			j->evs[j->n] = ev;
			j->ks[j->n] = k;
			j->vaddrs[j->n] = ev->points[k].vaddr;
			return (long)j->n++;
		}
	}
	return -1;
}

/* Takes recovered patch i into j, with the points its probes record: 0, or
 * -ENOMEM. */
static int joint_add_site(struct joint *j, struct dpd_proc *p, uint32_t i, bool *taken)
{
	const struct dpd_site *s = &p->sites[i];

	if (DP_ARRAY_RESERVE(j->sites, j->sites_cap, j->nsites, 16))
		return -ENOMEM;
	j->sites[j->nsites++] = i;
	taken[i] = true;
	for (uint32_t k = 0; k < s->patch.nprobes; k++) {
		const struct dpd_probe *pr = dpd_proc_probe(p, s->patch.probes[k]);

		if (pr && joint_member(j, p, pr) == -2)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Patch s of the joint plan's entry pl: the owners of s become the events
 * with points in pl (their shares), when s's probes are exactly pl's
 * points.
 */
static void joint_claim(struct joint *j, struct dpd_proc *p, struct dpd_site *s,
			const struct dp_patch *pl)
{
	struct dpd_owner owners[DPD_SITE_MAX_OWNERS];
	uint32_t nowners = 0;

	if (s->patch.nprobes != pl->npoints)
		return;
	for (uint32_t i = 0; i < s->patch.nprobes; i++) {
		const struct dpd_probe *pr = dpd_proc_probe(p, s->patch.probes[i]);
		long m = pr ? joint_member(j, p, pr) : -1;
		bool in = false;

		for (unsigned k = 0; m >= 0 && k < pl->npoints; k++)
			in |= pl->point_ids[k] == (size_t)m;
		if (!in)
			return;
	}
	for (size_t e = 0; e < j->n; e++) {
		struct dp_patch sh = *pl;
		const struct dp_patch *r;
		bool dup = false;

		for (uint32_t o = 0; o < nowners; o++)
			dup |= owners[o].ev == j->evs[e];
		if (dup)
			continue;
		sh.npoints = 0;
		for (unsigned k = 0; k < pl->npoints; k++) {
			if (j->evs[pl->point_ids[k]] != j->evs[e])
				continue;
			sh.points[sh.npoints] = pl->points[k];
			sh.point_ids[sh.npoints++] = j->ks[pl->point_ids[k]];
		}
		if (!sh.npoints)
			continue;
		if (nowners == DPD_SITE_MAX_OWNERS || !(r = dpd_event_share(j->evs[e], &sh)))
			return;
		owners[nowners++] = (struct dpd_owner){ j->evs[e], r, j->bias };
	}
	memcpy(s->owners, owners, nowners * sizeof(owners[0]));
	s->nowners = nowners;
}

/* The recovered patches a joint plan may take in: idx[0..n) (cand[i]: i is
 * one), found near an address through an index of p's sites; the tries of
 * claim_with left. */
struct recov {
	const uint32_t *idx;
	uint32_t n;
	bool *cand;
	struct dpd_site_ix ix;
	unsigned tries;
};

/* Takes recovered patch k into j when the patch ap (led) meets it: 0, or
 * -ENOMEM. */
static int take_meeting(struct joint *j, struct dpd_proc *p, const struct recov *rc, bool *taken,
			const struct dp_app_patch *ap, const struct dpd_led *led, uint32_t k)
{
	const struct dpd_site *s = &p->sites[k];

	if (!rc->cand[k] || taken[k] || !dpd_patches_meet(&s->patch, dpd_site_led(p, s), ap, led))
		return 0;
	return joint_add_site(j, p, k, taken);
}

/* Plans j's points, taking in the recovered patches its windows meet until
 * nothing new is met (as dpd_site_meeting looks: near the window and each
 * write, and every patch with a led): 0, or -errno.  The plan in *plan. */
static int joint_plan(struct joint *j, struct dpd_proc *p, const struct recov *rc, bool *taken,
		      struct dp_patch **plan, size_t *nplan)
{
	for (int round = 0; round < 8; round++) {
		size_t before = j->nsites;
		int ret = 0;

		free(*plan);
		*plan = NULL;
		ret = dp_plan_sites_flags(j->obj->obj, j->vaddrs, j->n, DPD_PLAN_FLAGS, plan, nplan);
		if (ret)
			return ret;
		dp_plan_refuse_unsafe_traps(j->obj->obj, *plan, *nplan);
		for (size_t i = 0; !ret && i < *nplan; i++) {
			struct dp_app_patch ap;
			struct dpd_led led;

			if ((*plan)[i].method == DP_SITE_REFUSED)
				continue;
			dpd_patch_window(&(*plan)[i], j->bias, &ap);
			dpd_patch_led(&(*plan)[i], j->obj->obj, j->bias, &led);
			for (unsigned w = 0; !ret && w <= led.nwrites; w++) {
				uint64_t a = w < led.nwrites ? led.w[w].addr : ap.site;
				size_t from, to;

				dpd_site_ix_range(p, &rc->ix,
						  a > DPD_PATCH_REACH * 2 ? a - DPD_PATCH_REACH * 2 : 0,
						  a + DPD_PATCH_REACH * 2, &from, &to);
				for (size_t k = from; !ret && k < to; k++)
					ret = take_meeting(j, p, rc, taken, &ap, &led, rc->ix.idx[k]);
			}
			for (size_t k = 0; !ret && k < rc->ix.nleds; k++)
				ret = take_meeting(j, p, rc, taken, &ap, &led, rc->ix.leds[k]);
		}
		if (ret)
			return ret;
		if (j->nsites == before)
			return 0;
	}
	return -EBUSY;
}

/* Claims j's patches whose window is one of the plan's. */
static void joint_claim_all(struct joint *j, struct dpd_proc *p, const struct dp_patch *plan,
			    size_t nplan)
{
	for (size_t i = 0; i < nplan; i++) {
		struct dp_app_patch ap;
		struct dpd_led led;

		if (plan[i].method == DP_SITE_REFUSED)
			continue;
		dpd_patch_window(&plan[i], j->bias, &ap);
		dpd_patch_led(&plan[i], j->obj->obj, j->bias, &led);
		for (size_t k = 0; k < j->nsites; k++) {
			struct dpd_site *s = &p->sites[j->sites[k]];

			if (dpd_same_window(&s->patch, dpd_site_led(p, s), &ap, &led))
				joint_claim(j, p, s, &plan[i]);
		}
	}
}

/* Tries of claim_with for one process. */
#define JOINT_TRIES 256

/*
 * Recovered patch idx[r] planned again with one more point: point k of ev
 * (an event of the object, disabled ones too), which a joint plan may have
 * held when the patch was made (its event taken out since, the bytes it
 * took from the patch's plan free now).  Whether the patch is explained.
 */
static bool claim_with(struct dpd_proc *p, const struct recov *rc, uint32_t r,
		       struct dpd_event *ev, uint32_t k, uint64_t bias)
{
	bool *taken = calloc(p->nsites ? p->nsites : 1, sizeof(*taken));
	struct joint j = { 0 };
	struct dp_patch *plan = NULL;
	size_t nplan = 0;
	bool ok = false;

	if (taken && !joint_add_site(&j, p, rc->idx[r], taken) && j.n && j.obj == ev->obj &&
	    j.bias == bias && !joint_grow(&j)) {
		j.evs[j.n] = ev;
		j.ks[j.n] = k;
		j.vaddrs[j.n++] = ev->points[k].vaddr;
		if (!joint_plan(&j, p, rc, taken, &plan, &nplan)) {
			joint_claim_all(&j, p, plan, nplan);
			ok = hooks_owned(p, &p->sites[rc->idx[r]]);
		}
	}
	free(plan);
	free(j.evs);
	free(j.ks);
	free(j.vaddrs);
	free(j.sites);
	free(taken);
	return ok;
}

/* The same with each point of the object's events near the patch in turn,
 * until one explains it (JOINT_TRIES in all for a process). */
static void claim_near(struct dpd_proc *p, struct recov *rc, uint32_t r, const struct joint *seed)
{
	uint64_t site = p->sites[rc->idx[r]].patch.site;

	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		if (ev->obj != seed->obj)
			continue;
		for (uint32_t k = 0; k < ev->npoints; k++) {
			uint64_t a = ev->points[k].vaddr + seed->bias;
			bool have = false;

			if (a + DPD_PATCH_REACH * 2 < site || a > site + DPD_PATCH_REACH * 2)
				continue;
			for (size_t m = 0; !have && m < seed->n; m++)
				have = seed->evs[m] == ev && seed->ks[m] == k;
			if (have)
				continue;
			if (!rc->tries)
				return;
			rc->tries--;
			if (claim_with(p, rc, r, ev, k, seed->bias))
				return;
		}
	}
}

/*
 * The recovered patches no event's own plan explains (a probe of theirs no
 * owner serves): planned together with other events' points (combine.c),
 * their windows are those of a joint plan.  From one such patch, the points
 * its probes record, and those of every recovered patch the plan's windows
 * meet, are planned again as one batch until nothing new is met, as
 * combine.c gathered them; a recovered patch with the window and the points
 * of an entry of that plan is owned by the events with points there.  One
 * whose plan no longer follows from the patches in place (the event it was
 * planned with taken out since, its bytes now free) is planned again with
 * each point of the object's events near it in turn.  One still unexplained
 * (the event it was planned with is gone) is restored (install.c).
 */
static void claim_joint(struct dpd_proc *p, const uint32_t *idx, uint32_t n)
{
	bool *taken = calloc(p->nsites ? p->nsites : 1, sizeof(*taken));
	struct recov rc = { idx, n, calloc(p->nsites ? p->nsites : 1, sizeof(bool)), { 0 },
			    JOINT_TRIES };

	if (!taken || !rc.cand || dpd_site_ix_build(p, &rc.ix)) {
		dpd_err("process %d: out of memory matching its patches to events", (int)p->pid);
		goto out;
	}
	for (uint32_t r = 0; r < n; r++)
		rc.cand[idx[r]] = true;
	for (uint32_t r = 0; r < n; r++) {
		const struct dpd_site *s = &p->sites[idx[r]];
		struct joint j = { 0 };
		struct dp_patch *plan = NULL;
		size_t nplan = 0;

		if (taken[idx[r]] || hooks_owned(p, s))
			continue;
		/* Every probe of it must be an event's point here. */
		if (joint_add_site(&j, p, idx[r], taken) || j.n < s->patch.nprobes ||
		    joint_plan(&j, p, &rc, taken, &plan, &nplan))
			goto next;
		joint_claim_all(&j, p, plan, nplan);
		if (!hooks_owned(p, s))
			claim_near(p, &rc, r, &j);
next:
		free(plan);
		free(j.evs);
		free(j.ks);
		free(j.vaddrs);
		free(j.sites);
	}
out:
	dpd_site_ix_free(&rc.ix);
	free(rc.cand);
	free(taken);
}

/*
 * The owners of the installed patches of p that no event claims (recovered
 * from the agent): every enabled event meant for this process whose plan has
 * the patch's window here and one of whose lttng names a probe of the patch
 * records.  Several events may claim one patch: they shared it.
 */
static void claim_sites(struct dpd_proc *p)
{
	uint32_t *idx = calloc(p->nsites ? p->nsites : 1, sizeof(*idx)), n = 0;

	/* A led written in part (a daemon killed between its writes) is
	 * no event's: it is restored (install.c). */
	for (uint32_t i = 0; idx && i < p->nsites; i++) {
		const struct dpd_led *led = dpd_site_led(p, &p->sites[i]);

		if (p->sites[i].installed && !p->sites[i].nowners && !(led && led->partial))
			idx[n++] = i;
	}
	for (struct dpd_event *ev = n ? dpd_events : NULL; ev; ev = ev->next) {
		/* By pid: its processes and their descendants (a forked
		 * child reports the patches it inherited). */
		bool listed = !ev->npids || dpd_event_reaches(ev, p->pid), biased = false;
		struct plan_ix pix = { 0 };
		uint64_t bias = 0;

		if ((ev->owner && ev->owner != p->uid) || !ev->enabled || !ev->obj || !listed)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			struct dpd_site *s = &p->sites[idx[i]];
			const struct dp_patch *pl;

			if (s->nowners == DPD_SITE_MAX_OWNERS || !names_probe(p, ev, &s->patch))
				continue;
			if (!biased && dpd_object_bias(ev->obj, p->pid, &bias))
				break;
			if (!biased && plan_ix_build(ev, &pix)) {
				dpd_err("process %d: out of memory matching its patches to %s",
					(int)p->pid, ev->names[0]);
				break;
			}
			biased = true;
			pl = plan_ix_window(&pix, bias, &s->patch, dpd_site_led(p, s));
			if (pl)
				s->owners[s->nowners++] = (struct dpd_owner){ ev, pl, bias };
		}
		free(pix.idx);
	}
	/* Those planned together with other events' points. */
	if (n)
		claim_joint(p, idx, n);
	free(idx);
}

/* The records of p by site address: the latest one of each address in at,
 * the one before it in prev[index] (index + 1, 0: none). */
struct site_chain {
	struct dp_u64map at;
	uint32_t *prev;
	size_t cap;
};

static int chain_add(struct site_chain *c, const struct dpd_proc *p, uint32_t k)
{
	uint32_t head = 0;

	if (DP_ARRAY_RESERVE(c->prev, c->cap, k, 64))
		return -ENOMEM;
	dp_u64map_get(&c->at, p->sites[k].patch.site, &head);
	c->prev[k] = head;
	return dp_u64map_put(&c->at, p->sites[k].patch.site, k + 1);
}

static void chain_free(struct site_chain *c)
{
	dp_u64map_free(&c->at);
	free(c->prev);
}

/* What HELLO says is installed, merged into our record of the process. */
static int adopt_state(struct dpd_proc *p, const struct dp_app_state *s)
{
	struct dpd_claim_files files;
	struct site_chain chain = { 0 };
	struct dp_maps maps = { 0 };
	uint32_t nbad = 0;

	dpd_claim_files_init(&files, p->pid, true);
	if (dpd_proc_reserve(p, s->nprobes, 0))
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nprobes; i++) {
		const struct dp_app_probe *ap = &s->probes[i];
		struct dpd_probe *dp;

		if (dpd_proc_probe(p, ap->id))
			continue;
		dp = &p->probes[p->nprobes++];
		memset(dp, 0, sizeof(*dp));
		dp->id = ap->id;
		dp->site = ap->site;
		dp->flags = ap->flags;
		snprintf(dp->event, sizeof(dp->event), "%s", ap->event);
		/* Its contexts are unknown (sig NULL): it is never reused for a
		 * new patch, only recognised in the patches that name it. */
		if (ap->id >= p->next_id)
			p->next_id = ap->id + 1;
	}
	/* Unreadable (the process exited): no claim can be believed. */
	if (s->npatches && dp_maps_read(p->pid, &maps))
		maps = (struct dp_maps){ 0 };
	/* Our records of each site address (tens of thousands in a process
	 * whose whole program is probed): a chain through them, not a walk. */
	for (uint32_t k = 0; k < p->nsites && s->npatches; k++)
		if (chain_add(&chain, p, k))
			goto nomem;
	for (uint32_t i = 0; i < s->npatches; i++) {
		const struct dp_app_patch *ap = &s->patches[i];
		const struct dpd_probe *first = dpd_proc_probe(p, ap->probes[0]);
		struct dpd_site *site, *v;
		uint32_t at = p->nsites, head = 0;
		struct dp_err why = DP_ERR_INIT;

		/* Never believed blindly: restoring it writes its bytes. */
		if (dpd_claim_check_files(&files, &maps, ap, false, &why) < 0) {
			dpd_err("process %d: its agent reports a patch at 0x%" PRIx64 " that cannot "
				"be: %s; ignored, nothing is written there", (int)p->pid, ap->site,
				why.msg);
			nbad++;
			continue;
		}

		/* Our own record of that trampoline, when we wrote it (the last
		 * one). */
		dp_u64map_get(&chain.at, ap->site, &head);
		for (uint32_t k = head; k && at == p->nsites; k = chain.prev[k - 1])
			if (p->sites[k - 1].patch.tramp == ap->tramp)
				at = k - 1;
		if (at == p->nsites) {
			if (dpd_proc_reserve(p, 0, 1))
				goto nomem;
			v = p->sites;
			memset(&v[p->nsites++], 0, sizeof(*v));
			v[at].entry = ap->tramp;
			v[at].patch.site = ap->site;
			if (chain_add(&chain, p, at))
				goto nomem;
			dp_u64map_get(&chain.at, ap->site, &head);
		}
		/* The agent knows which one the code holds. */
		for (uint32_t k = head; k; k = chain.prev[k - 1])
			p->sites[k - 1].installed = false;
		site = &p->sites[at];
		site->patch = *ap;
		site->installed = true;
		if (first)
			snprintf(site->event, sizeof(site->event), "%s", first->event);
		p->recovered = true;
	}
	dpd_claim_files_release(&files);
	chain_free(&chain);
	dp_maps_free(&maps);
	if (s->npatches)
		dpd_info("process %d: recovered %u patches and %u probes from its agent",
			 (int)p->pid, s->npatches - nbad, s->nprobes);
	return 0;
nomem:
	dpd_claim_files_release(&files);
	chain_free(&chain);
	dp_maps_free(&maps);
	return -ENOMEM;
}

/*
 * The leds an agent of minor 4 records (LIST_WRITES), after its HELLO:
 * each one's patch and writes checked against the code (claims.c), joined
 * to the record of its jump (HELLO's), or a record of its own (a
 * redirect).  One whose every byte is original is forgotten (and the
 * agent told); one written in part stays, for no event to claim.
 */
static void adopt_leds(struct dpd_proc *p)
{
	struct dp_app_msg req = { .type = DP_APP_LIST_WRITES }, rep;
	struct dp_maps maps = { 0 };
	struct dp_err msg = DP_ERR_INIT;
	uint32_t nled = 0;

	uint8_t image[DPD_IMAGE_ID_LEN];

	if (p->minor < DP_APP_MINOR_WRITES || p->fd < 0)
		return;
	/* Another program since HELLO: nothing of the old one is there to
	 * ask about (the next write says so, and writes nothing). */
	if (p->image_known && !dpd_image_id(p->pid, image) && memcmp(image, p->image, sizeof(image)))
		return;
	if (dpd_agent_call(p, &req, &rep, &msg)) {
		dpd_err("process %d: its agent's leds cannot be read: %s", (int)p->pid, msg.msg);
		dp_app_msg_release(&rep);
		return;
	}
	if (rep.leds.nleds && dp_maps_read(p->pid, &maps))
		maps = (struct dp_maps){ 0 };
	for (uint32_t i = 0; i < rep.leds.nleds; i++) {
		const struct dp_app_led *l = &rep.leds.leds[i];
		const struct dpd_probe *first = dpd_proc_probe(p, l->patch.probes[0]);
		struct dpd_led led = { .nwrites = (uint8_t)l->nwrites };
		struct dpd_site *site = NULL;
		struct dp_err why = DP_ERR_INIT;
		int st;

		led.want = led.nwrites;
		led.recovered = true;
		memcpy(led.w, l->writes, l->nwrites * sizeof(l->writes[0]));
		st = dpd_claim_check_led(p->pid, &maps, &l->patch, &led, false, &why);
		if (st < 0) {
			dpd_err("process %d: its agent reports led writes at 0x%" PRIx64 " that "
				"cannot be: %s; ignored, nothing is written there", (int)p->pid,
				l->patch.site, why.msg);
			continue;
		}
		led.partial = st == 2;
		for (uint32_t k = 0; k < p->nsites; k++)
			if (p->sites[k].patch.site == l->patch.site &&
			    p->sites[k].patch.tramp == l->patch.tramp &&
			    p->sites[k].patch.method == l->patch.method)
				site = &p->sites[k];
		if (!site) {
			if (dpd_proc_reserve(p, 0, 1))
				break;
			for (uint32_t k = 0; k < p->nsites; k++)
				if (p->sites[k].patch.site == l->patch.site)
					p->sites[k].installed = false;
			site = &p->sites[p->nsites++];
			memset(site, 0, sizeof(*site));
			site->entry = l->patch.tramp;
			site->patch = l->patch;
			if (first)
				snprintf(site->event, sizeof(site->event), "%s", first->event);
		}
		site->installed = st != 0;
		if (dpd_site_set_led(p, site, &led))
			break;
		nled++;
		p->recovered = true;
		if (!st) {
			dpd_info("process %d: the led at 0x%" PRIx64 " its agent reports is not in "
				 "its code: forgotten", (int)p->pid, l->patch.site);
			dpd_agent_note_removed(p, l->patch.site, &msg);
		}
	}
	dp_maps_free(&maps);
	dp_app_msg_release(&rep);
	if (nled)
		dpd_info("process %d: recovered %u leds from its agent", (int)p->pid, nled);
}

static void refuse(int fd, uint8_t major, uint8_t minor)
{
	struct dp_app_msg m = { .type = DP_APP_REFUSE };

	m.refuse.major = DP_APP_MAJOR;
	m.refuse.minor = DP_APP_MINOR;
	snprintf(m.refuse.reason, sizeof(m.refuse.reason),
		 "lttng-dynprobed speaks protocol %u.%u, the agent %u.%u: use an agent of the "
		 "same version", DP_APP_MAJOR, DP_APP_MINOR, major, minor);
	dp_app_send(fd, &m, DP_APP_TIMEOUT_MS);
}

static bool hello_serve(int fd, pid_t pid, uid_t uid, gid_t gid, struct dp_app_msg *hp,
			int64_t t0);

bool dpd_agent_hello(int fd, pid_t pid, uid_t uid, gid_t gid, const uint8_t *frame,
		     size_t len)
{
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	struct dp_err why_perm = DP_ERR_INIT;
	int64_t t0 = dpd_now_ms();
	struct dp_app_msg hello;
	bool adopted;
	int ret;

	/* Root's socket is everyone's: the process must still run as the
	 * user who connected (no set-user-ID program executed since). */
	if (dpd_perm_peer(pid, uid, gid, true, &why_perm)) {
		dpd_err("agent of pid %d (uid %u) refused: %s", (int)pid, (unsigned)uid,
			why_perm.msg);
		return false;
	}
	ret = dp_app_decode_frame(frame, len, &hello, &why);
	if (ret == -EPROTO && why == DP_PROTO_ERR_VERSION) {
		refuse(fd, hello.major, hello.minor);
		dpd_err("agent of pid %d speaks protocol %u.%u, we %u.%u: refused", (int)pid,
			hello.major, hello.minor, DP_APP_MAJOR, DP_APP_MINOR);
		return false;
	}
	if (ret || hello.type != DP_APP_HELLO) {
		dpd_err("agent of pid %d: no HELLO (%s)", (int)pid,
			ret == -EPROTO ? dp_proto_err_str(why) : strerror(-ret));
		dp_app_msg_release(&hello);
		return false;
	}
	if ((pid_t)hello.hello.pid != pid)
		dpd_info("agent says pid %u, its socket says %d: using %d", hello.hello.pid,
			 (int)pid, (int)pid);
	/* Checked and decoded (a large state takes a while) before the state
	 * lock, which the rest needs. */
	dpd_lock();
	adopted = hello_serve(fd, pid, uid, gid, &hello, t0);
	dpd_unlock();
	return adopted;
}

/* The rest of dpd_agent_hello (begun at t0), with the state lock;
 * releases hello. */
static bool hello_serve(int fd, pid_t pid, uid_t uid, gid_t gid, struct dp_app_msg *hp,
			int64_t t0)
{
	struct dp_app_msg hello = *hp, rep = { .type = DP_APP_HELLO_REPLY };
	uint8_t image[DPD_IMAGE_ID_LEN];
	int64_t held;
	bool image_known;
	struct dpd_proc *p;
	int ret;

	/* An install waiting for this very HELLO lends its hold. */
	if (dpd_hold_hello(pid)) {
		dp_app_msg_release(&hello);
		return false;
	}
	held = dpd_now_ms();
	p = dpd_proc_find(pid);
	image_known = !dpd_image_id(pid, image);
	if (p && ((p->probe_hit && p->probe_hit != hello.hello.probe_hit) ||
		  (p->image_known && image_known && memcmp(p->image, image, sizeof(image))))) {
		/* Another agent in that pid: the process executed a new image
		 * (its agent followed it), or the pid was reused.  What we
		 * knew of it is gone with the old image. */
		dpd_info("process %d runs a new image", (int)p->pid);
		dpd_proc_forget(p);
		p = NULL;
	}
	if (!p)
		p = dpd_proc_add(pid);
	if (!p) {
		dp_app_msg_release(&hello);
		dpd_unhold(pid);
		return false;
	}
	dpd_agent_close(p);
	p->fd = fd;
	p->uid = uid;
	p->gid = gid;
	p->image_known = image_known;
	if (image_known)
		memcpy(p->image, image, sizeof(image));
	p->seq = 1;
	p->probe_hit = hello.hello.probe_hit;
	/* The version the agent says it speaks, in the header and in HELLO
	 * (when HELLO's major is ours): the lower one (an agent may announce
	 * less than it knows). */
	p->minor = hello.hello.major == DP_APP_MAJOR && hello.hello.minor < hello.minor ?
		   hello.hello.minor : hello.minor;
	/* A forked child's agent has its parent's mode, a new image's none:
	 * unknown, unless it cannot have been told to follow. */
	dpd_follow_hello(p, hello.hello.state.npatches);
	if (adopt_state(p, &hello.hello.state))
		dpd_err("process %d: out of memory recording its state", (int)p->pid);
	dpd_fault("hello");
	rep.seq = hello.seq;
	dp_app_msg_release(&hello);

	rep.hello_reply.major = DP_APP_MAJOR;
	rep.hello_reply.minor = DP_APP_MINOR;
	rep.hello_reply.daemon_pid = (uint32_t)getpid();
	/* The agent waits for this answer 5 s (or its GO wait): said when it
	 * comes late, with where the time went. */
	if (dpd_now_ms() - t0 >= 2000)
		dpd_err("process %d: its HELLO is answered after %lld ms (%lld until the "
			"process's hold was ours, %lld serving it)", (int)pid,
			(long long)(dpd_now_ms() - t0), (long long)(held - t0),
			(long long)(dpd_now_ms() - held));
	ret = dp_app_send(fd, &rep, DP_APP_TIMEOUT_MS);
	if (ret) {
		dpd_err("process %d: cannot answer HELLO: %s", (int)p->pid, strerror(-ret));
		/* The caller closes fd. */
		p->fd = -1;
		if (!dp_proc_alive(p->pid))
			dpd_proc_forget(p);
		dpd_unhold(pid);
		return false;
	}
	dpd_watch_set(pid, fd, uid);
	/* The calls of a HELLO (its leds, its reconciliation) have one
	 * deadline in all: an install may be waiting for it to end. */
	calls_until = dpd_now_ms() + DPD_RECONCILE_MS;
	adopt_leds(p);
	claim_sites(p);
	p->go_pending = true;
	dpd_info("agent of process %d connected (uid %u, protocol %u.%u)", (int)p->pid,
		 (unsigned)p->uid, DP_APP_MAJOR, p->minor);
	/* At once: an install waiting for this agent (dpd_agent_wait) must not
	 * take a patch the agent still reports, but which is not in the code
	 * (restored while it was away), for one in place. */
	if (p->recovered) {
		dpd_agent_reconcile(p);
		/* And with the record, the raises it came with: a removal
		 * served before its pending job lowers them. */
		dpd_sem_adopt(p);
	}
	calls_until = 0;
	dpd_unhold(pid);
	return true;
}

struct dpd_proc *dpd_agent_wait(pid_t pid, int timeout_ms)
{
	int64_t deadline = dpd_now_ms() + timeout_ms;
	/* A HELLO being served is waited for past the deadline, as long as
	 * one may take: its reply (DP_APP_TIMEOUT_MS) and its
	 * reconciliation (DPD_RECONCILE_MS), with room to spare. */
	int64_t borrow_end = deadline + 2 * DP_APP_TIMEOUT_MS + DPD_RECONCILE_MS;

	for (;;) {
		struct dpd_proc *p = dpd_proc_find(pid);
		int64_t left = deadline - dpd_now_ms();

		if (dpd_hold_borrowed(pid)) {
			if (dpd_now_ms() >= borrow_end) {
				dpd_err("process %d: its HELLO is still being served %d ms past "
					"the wait for it: the install goes on without it",
					(int)pid, (int)(borrow_end - deadline));
				return NULL;
			}
			dpd_wait_change(borrow_end);
			continue;
		}
		if (p && p->fd >= 0)
			return p;
		if (left <= 0 || !dp_proc_alive(pid))
			return NULL;
		/* Short naps: a process that dies meanwhile is noticed. */
		dpd_wait_change(dpd_now_ms() + (left > 100 ? 100 : left));
	}
}

/* A MAPPED (an agent's only request): its installs and its reply are to do
 * from the main loop (a newer cookie covers the older ones). */
static void agent_request(void *arg, struct dp_app_msg *m)
{
	struct dpd_proc *p = arg;

	if (m->type != DP_APP_MAPPED) {
		dpd_dbg("process %d: unexpected %s", (int)p->pid,
			dp_app_type_name(m->type) ? dp_app_type_name(m->type) : "message");
		return;
	}
	dpd_dbg("process %d: MAPPED %" PRIu64, (int)p->pid, m->mapped);
	if (m->mapped > p->mapped) {
		p->mapped = m->mapped;
		p->mapped_seq = m->seq;
	}
}

/* The same during a call, which runs without the state lock. */
static void agent_request_unlocked(void *arg, struct dp_app_msg *m)
{
	dpd_lock();
	agent_request(arg, m);
	dpd_unlock();
}

int dpd_agent_mapped_reply(struct dpd_proc *p, uint64_t cookie, uint32_t seq)
{
	struct dp_app_msg rep = { .type = DP_APP_MAPPED_REPLY, .seq = seq };
	int ret;

	rep.mapped = cookie;
	if (p->mapped == cookie)
		p->mapped = 0;
	if (p->fd < 0)
		return -ENOTCONN;
	/* An agent that reads nothing holds the send up to its timeout: p
	 * is held (its record and connection are ours), others are served
	 * meanwhile. */
	dpd_unlock();
	ret = dp_app_send(p->fd, &rep, DP_APP_TIMEOUT_MS);
	dpd_lock();
	if (ret) {
		dpd_dbg("MAPPED_REPLY to %d: %s", (int)p->pid, strerror(-ret));
		conn_lost(p);
	}
	return ret;
}

int dpd_agent_call(struct dpd_proc *p, struct dp_app_msg *req, struct dp_app_msg *rep,
		   struct dp_err *msg)
{
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	const char *name = dp_app_type_name(req->type);
	int ret, timeout_ms = DP_APP_TIMEOUT_MS;

	memset(rep, 0, sizeof(*rep));
	if (p->fd < 0) {
		dp_err_set(msg, -ENOTCONN, "the agent of process %d is not connected", (int)p->pid);
		return -ENOTCONN;
	}
	if (calls_until) {
		int64_t left = calls_until - dpd_now_ms();

		timeout_ms = left <= 0 ? 0 : left < timeout_ms ? (int)left : timeout_ms;
	}
	/* The wait is the agent's: others go on meanwhile (p is ours).  It
	 * has one deadline, which the agent's MAPPED do not move, and a
	 * bound on their number (dp_app_call_cb). */
	dpd_unlock();
	ret = timeout_ms ? dp_app_call_cb(p->fd, req, &p->seq, rep, timeout_ms, &why,
					  agent_request_unlocked, p)
			 : -ETIMEDOUT;
	dpd_lock();
	if (ret == -EOPNOTSUPP) {
		dp_err_set(msg, ret, "the agent of process %d does not know %s: it is older than "
				     "this daemon", (int)p->pid, name);
		return ret;
	}
	if (ret) {
		bool alive = dp_proc_alive(p->pid);

		if (!alive)
			dp_err_set(msg, -ESRCH, "process %d exited during the operation",
				   (int)p->pid);
		else if (ret == -ETIMEDOUT)
			dp_err_set(msg, ret, "the agent of process %d did not answer %s within "
				   "%d ms: connection closed", (int)p->pid, name, timeout_ms);
		else if (ret == -EOVERFLOW)
			dp_err_set(msg, ret, "the agent of process %d sent more than %d requests "
				   "instead of answering %s: connection closed", (int)p->pid,
				   DP_CODEC_MAX_PEER_REQUESTS, name);
		else
			dp_err_set(msg, ret, "the agent of process %d did not answer %s: %s",
				   (int)p->pid, name,
				   ret == -EPROTO ? dp_proto_err_str(why) : strerror(-ret));
		/* Said once here, whoever the caller is: a stuck agent is
		 * what holds its process's requests up. */
		if (alive && (ret == -ETIMEDOUT || ret == -EOVERFLOW))
			dpd_err("%s", msg->msg);
		else
			dpd_dbg("%s to %d: %s", name, (int)p->pid, msg->msg);
		/* The stream cannot be trusted after a failed call. */
		dpd_agent_close(p);
		return alive ? ret : -ESRCH;
	}
	switch (rep->type) {
	case DP_APP_DEFINE_PROBE_REPLY:
	case DP_APP_DEFINE_PROBE_EXT_REPLY:
	case DP_APP_ALLOC_CODE_REPLY:
	case DP_APP_NOTE_INSTALLED_REPLY:
	case DP_APP_NOTE_REMOVED_REPLY:
	case DP_APP_NOTE_INSTALLED_MANY_REPLY:
	case DP_APP_NOTE_REMOVED_MANY_REPLY:
		if (rep->result.status)
			return dp_err_set(msg, rep->result.status, "process %d: %s", (int)p->pid,
					  rep->result.error);
		break;
	default:
		break;
	}
	return 0;
}

int dpd_agent_note(struct dpd_proc *p, const struct dp_app_patch *ap, struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_INSTALLED }, rep;
	int ret;

	req.note_installed = *ap;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

int dpd_agent_note_removed(struct dpd_proc *p, uint64_t site, struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_REMOVED }, rep;
	int ret;

	req.note_removed = site;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

bool dpd_agent_readable(pid_t pid, int fd)
{
	uint8_t head[DP_FRAME_HDR_LEN];
	struct dpd_proc *p;
	bool partial = false;

	if (dpd_hold(pid))
		return false;
	p = dpd_proc_find(pid);
	/* A connection closed without a word to the loop is not polled again
	 * (its number may be another's already). */
	if (!p || p->fd != fd)
		dpd_watch_clear(pid, fd);
	/* Served meanwhile by a call, or closed and maybe reused: only the
	 * process's own connection is read, and only whole frames. */
	while (p && p->fd == fd) {
		struct dp_frame_hdr h;
		struct dp_app_msg m;
		enum dp_proto_err why;
		ssize_t n = recv(fd, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT);
		int avail = 0, ret;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			conn_lost(p);
			break;
		}
		if (n == (ssize_t)sizeof(head)) {
			ret = dp_frame_hdr_decode(head, DP_APP_MAGIC, DP_APP_MAJOR,
						  DP_APP_MAX_PAYLOAD, &h, &why);
			if (ret) {
				dpd_info("agent of process %d: %s: connection closed", (int)pid,
					 dp_proto_err_str(why));
				conn_lost(p);
				break;
			}
			if (ioctl(fd, FIONREAD, &avail) < 0)
				avail = 0;
		}
		if (n < (ssize_t)sizeof(head) || (size_t)avail < sizeof(head) + h.len) {
			/* Half a frame: looked at again later, closed when it
			 * stays half as long as a frame may take. */
			int64_t now = dpd_now_ms();

			if (!p->partial_since)
				p->partial_since = now;
			if (now - p->partial_since >= DP_APP_TIMEOUT_MS) {
				dpd_info("agent of process %d: half a frame for %d ms: connection "
					 "closed", (int)pid, DP_APP_TIMEOUT_MS);
				conn_lost(p);
				break;
			}
			partial = true;
			break;
		}
		p->partial_since = 0;
		/* Agents answer, and say MAPPED; anything else is noise. */
		ret = dp_app_recv(fd, &m, DP_APP_TIMEOUT_MS, &why);
		if (ret == 0) {
			agent_request(p, &m);
			dp_app_msg_release(&m);
			continue;
		}
		if (ret == -EPROTO && !dp_proto_err_fatal(why))
			continue;
		conn_lost(p);
		break;
	}
	dpd_unhold(pid);
	return partial;
}

/*
 * What the agent reports against the process's code: a patch whose site
 * holds its original bytes is not there (a daemon died between noting an
 * int3 and writing it, or restored a site while the agent was away): the
 * agent is told, and the record dropped.
 */
void dpd_agent_reconcile(struct dpd_proc *p)
{
	struct dpd_claim_files mem;
	uint64_t *sites = NULL;
	size_t n = 0, cap = 0;
	struct dp_err msg = DP_ERR_INIT;
	struct dp_maps maps;
	bool mine;

	/* One /proc/PID/mem for all the reads, by blocks of each mapping. */
	dpd_claim_files_init(&mem, p->pid, true);
	if (!dp_maps_read(p->pid, &maps))
		mem.maps = &maps;
	for (uint32_t i = 0; i < p->nsites && p->fd >= 0; i++) {
		struct dpd_site *s = &p->sites[i];
		uint8_t cur[DP_APP_MAX_ORIG];

		/* A led's parts are looked at together (adopt_leds). */
		if (!s->installed || s->led ||
		    dpd_claim_files_read(&mem, s->patch.site, cur, s->patch.len) ||
		    memcmp(cur, s->patch.orig, s->patch.len))
			continue;
		dpd_dbg("process %d: the patch at 0x%" PRIx64 " its agent reports is not in "
			"its code: forgotten", (int)p->pid, s->patch.site);
		s->installed = false;
		if (DP_ARRAY_RESERVE(sites, cap, n, 64) == 0)
			sites[n++] = s->patch.site;
	}
	dpd_claim_files_release(&mem);
	if (mem.maps)
		dp_maps_free(&maps);
	if (!n)
		return;
	dpd_info("process %d: %zu patches its agent reports are not in its code: forgotten",
		 (int)p->pid, n);
	/* In batches (one NOTE_REMOVED each for an older agent), all of them
	 * within one deadline: an agent that reports tens of thousands of
	 * such patches and answers slowly holds its process that long, no
	 * more (its connection is closed; it says HELLO again). */
	mine = !calls_until;
	if (mine)
		calls_until = dpd_now_ms() + DPD_RECONCILE_MS;
	if (dpd_notes_removed(p, sites, n, &msg))
		dpd_info("process %d: %s", (int)p->pid, msg.msg);
	if (mine)
		calls_until = 0;
	free(sites);
}

void dpd_procs_reap(void)
{
	bool again = true;

	/* Processes whose agent went away are not polled: look at them. */
	while (again) {
		again = false;
		for (struct dpd_proc *p = dpd_procs; p; p = p->next) {
			if (p->fd >= 0 || dpd_held(p->pid) || dp_proc_alive(p->pid))
				continue;
			dpd_proc_forget(p);
			again = true;
			break;
		}
	}
}
