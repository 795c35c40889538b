/*
 * Probes whose windows meet without being the same, in one process: the
 * points of every event concerned planned again as one batch (dp_plan_sites
 * folds a point inside another's window into it as a hook), and the patches
 * of that plan put in place of the installed ones in one stop.
 *
 * The events concerned: those joining now (install.c), and the owners of
 * every installed patch a window of the new plan meets, taken in until no
 * window of the plan meets a patch outside the group; removal (remove.c)
 * starts from the patches of the event that leaves, without its points.
 * Each event's part of a planned patch is its share (state.c keeps it), so
 * a patch's owners are shares like the entries of their own plans.  A
 * planned patch whose window and owners are those of an installed one
 * leaves it as it is; one with the same window is rebuilt (the jump
 * retargeted); the others are new, written after the installed patches
 * they replace are restored, in the same stop, all or nothing
 * (dpd_write_batch).  A replaced trampoline is kept: a thread in it goes
 * back to its window's end, which the new plan must leave a place a thread
 * may be (the first byte of a window, or bytes no window covers).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

/* Rounds of taking in the patches a new plan meets. */
#define ROUNDS 8

/* One point of the union: the event (index in the group) and its point. */
struct member {
	uint32_t e;
	uint32_t k;
};

struct group {
	struct dpd_proc *p;
	struct dpd_event **evs;		/* joining ones first */
	struct dp_client_proc **rps;	/* the joining ones' reports, NULL after */
	size_t nev, njoin;
	const struct dpd_event *leave;
	uint32_t *sites;		/* the installed patches replaced */
	size_t nsites;
	struct member *mem;
	uint64_t *vaddrs;
	size_t nmem;
	struct dp_patch *plan;
	size_t nplan;
	uint64_t bias;
};

static int add_event(struct group *g, struct dpd_event *ev, struct dp_err *msg)
{
	for (size_t i = 0; i < g->nev; i++)
		if (g->evs[i] == ev)
			return 0;
	if (g->nev && ev->obj != g->evs[0]->obj)
		return dp_err_set(msg, -EBUSY, "%s", dp_reason_str(DP_REASON_OVERLAP));
	g->evs[g->nev++] = ev;
	return 0;
}

static void add_point(struct group *g, uint32_t e, uint32_t k)
{
	for (size_t i = 0; i < g->nmem; i++)
		if (g->mem[i].e == e && g->mem[i].k == k)
			return;
	g->mem[g->nmem] = (struct member){ e, k };
	g->vaddrs[g->nmem++] = g->evs[e]->points[k].vaddr;
}

static uint32_t event_index(const struct group *g, const struct dpd_event *ev)
{
	uint32_t e = 0;

	while (g->evs[e] != ev)
		e++;
	return e;
}

/* Takes installed patch i into the group: its owners (but the one that
 * leaves) and their points there. */
static int add_site(struct group *g, uint32_t i, struct dp_err *msg)
{
	const struct dpd_site *s = &g->p->sites[i];
	int ret;

	for (size_t k = 0; k < g->nsites; k++)
		if (g->sites[k] == i)
			return 0;
	if (!s->nowners)
		return dp_err_set(msg, -EBUSY, "%s (the patch at 0x%" PRIx64 " of %s)",
				  dp_reason_str(DP_REASON_OVERLAP), s->patch.site,
				  s->event[0] ? s->event : "an event this daemon does not know");
	g->sites[g->nsites++] = i;
	for (uint32_t o = 0; o < s->nowners; o++) {
		const struct dpd_owner *ow = &s->owners[o];

		if (ow->ev == g->leave)
			continue;
		ret = add_event(g, ow->ev, msg);
		if (ret)
			return ret;
		for (unsigned k = 0; k < ow->pl->npoints; k++)
			add_point(g, event_index(g, ow->ev), (uint32_t)ow->pl->point_ids[k]);
	}
	return 0;
}

/* Takes in the installed patches the windows of `plan` meet: how many were
 * new, or -errno. */
static int take_met(struct group *g, const struct dp_patch *plan, size_t n, struct dp_err *msg)
{
	size_t before = g->nsites;

	for (size_t i = 0; i < n; i++) {
		struct dp_app_patch ap;
		struct dpd_led led;

		if (plan[i].method == DP_SITE_REFUSED)
			continue;
		dpd_patch_window(&plan[i], g->bias, &ap);
		dpd_patch_led(&plan[i], g->evs[0]->obj->obj, g->bias, &led);
		for (uint32_t k = 0; k < g->p->nsites; k++) {
			const struct dpd_site *s = &g->p->sites[k];
			int ret;

			if (!s->installed ||
			    !dpd_patches_meet(&s->patch, dpd_site_led(g->p, s), &ap, &led))
				continue;
			ret = add_site(g, k, msg);
			if (ret)
				return ret;
		}
	}
	return (int)(g->nsites - before);
}

/* Plans the union of the group's points, taking in what it meets until
 * nothing new is met. */
/*
 * The joint plan needs an int3 in a process where a thread blocks SIGTRAP
 * (an int3 it hit would kill the process): the request changes nothing.
 */
static int refuse_trap_blocked(const struct group *g, struct dp_err *msg)
{
	char comm[64];
	pid_t blocker;

	for (size_t i = 0; i < g->nplan; i++) {
		if (g->plan[i].method != DP_SITE_INT3)
			continue;
		blocker = dpd_sigtrap_blocker(g->p->pid, comm, sizeof(comm));
		if (!blocker)
			return 0;
		return dp_err_set(msg, -ENOTSUP, "the site 0x%" PRIx64 " of %s: only an int3 "
				  "fits, and thread %d (%s) of process %d blocks SIGTRAP: an int3 "
				  "it hit would kill the process", g->plan[i].win.addr,
				  g->evs[0]->path, (int)blocker, comm, (int)g->p->pid);
	}
	return 0;
}

static int plan_group(struct group *g, struct dp_err *msg)
{
	for (int round = 0; round < ROUNDS; round++) {
		int ret;

		free(g->plan);
		g->plan = NULL;
		g->nplan = 0;
		if (!g->nmem)
			return 0;
		ret = dp_plan_sites_flags(g->evs[0]->obj->obj, g->vaddrs, g->nmem, DPD_PLAN_FLAGS,
					  &g->plan, &g->nplan);
		if (ret)
			return dp_err_set(msg, ret, "cannot plan the probes of %s together: %s",
					  g->evs[0]->path, strerror(-ret));
		dp_plan_refuse_unsafe_traps(g->evs[0]->obj->obj, g->plan, g->nplan);
		ret = take_met(g, g->plan, g->nplan, msg);
		if (ret < 0)
			return ret;
		if (!ret)
			return refuse_trap_blocked(g, msg);
	}
	return dp_err_set(msg, -EBUSY, "the probes of %s meet too many patches to plan together",
			  g->evs[0]->path);
}

/* Event e's share of planned patch pl, or NULL when it has no point there
 * (or -ENOMEM: *err set). */
static const struct dp_patch *share_of(const struct group *g, uint32_t e,
				       const struct dp_patch *pl, int *err)
{
	struct dp_patch sh = *pl;
	const struct dp_patch *r;

	sh.npoints = 0;
	for (unsigned j = 0; j < pl->npoints; j++) {
		const struct member *m = &g->mem[pl->point_ids[j]];

		if (m->e != e)
			continue;
		sh.points[sh.npoints] = pl->points[j];
		sh.point_ids[sh.npoints++] = m->k;
	}
	if (!sh.npoints)
		return NULL;
	r = dpd_event_share(g->evs[e], &sh);
	if (!r)
		*err = -ENOMEM;
	return r;
}

/* Whether installed patch s has exactly the owners of w. */
static bool same_owners(const struct dpd_site *s, const struct dpd_work *w)
{
	if (s->nowners != w->rec.nowners)
		return false;
	for (uint32_t i = 0; i < s->nowners; i++)
		if (s->owners[i].ev != w->rec.owners[i].ev || s->owners[i].pl != w->rec.owners[i].pl)
			return false;
	return true;
}

/*
 * Turns planned patch pl into work w: its owners' shares, then what it does
 * to the installed patch of the same window, if any (kept[] marks it).
 * 1 when w is to be written, 0 when the patch in place is the same, or
 * -errno with msg.
 */
static int make_work(struct group *g, const struct dp_patch *pl, struct dpd_work *w, bool *kept,
		     struct dp_err *msg)
{
	struct dp_app_patch ap;
	int err = 0;

	dpd_patch_window(pl, g->bias, &ap);
	memset(w, 0, sizeof(*w));
	w->rec.patch = ap;
	dpd_patch_led(pl, g->evs[0]->obj->obj, g->bias, &w->led);
	for (uint32_t e = 0; e < g->nev; e++) {
		const struct dp_patch *sh = share_of(g, e, pl, &err);

		if (err)
			return dp_err_set(msg, err, "out of memory");
		if (!sh)
			continue;
		if (w->rec.nowners == DPD_SITE_MAX_OWNERS)
			return dp_err_set(msg, -EBUSY, "%d events share the patch at 0x%" PRIx64
					  " already", DPD_SITE_MAX_OWNERS, ap.site);
		w->rps[w->rec.nowners] = e < g->njoin ? g->rps[e] : NULL;
		w->rec.owners[w->rec.nowners++] = (struct dpd_owner){ g->evs[e], sh, g->bias };
	}
	for (size_t k = 0; k < g->nsites; k++) {
		const struct dpd_site *s = &g->p->sites[g->sites[k]];

		if (!dpd_same_window(&s->patch, dpd_site_led(g->p, s), &ap, &w->led))
			continue;
		kept[k] = true;
		if (same_owners(s, w))
			return 0;
		w->replaces = true;
		w->old = g->sites[k];
		w->rec.patch = s->patch;
		return 1;
	}
	w->regroup = true;
	return 1;
}

/* A point an owner had installed that the new plan refuses, or NULL. */
static const struct dp_patch *lost_point(const struct group *g)
{
	for (size_t i = 0; i < g->nplan; i++) {
		const struct dp_patch *pl = &g->plan[i];

		if (pl->method != DP_SITE_REFUSED)
			continue;
		for (unsigned j = 0; j < pl->npoints; j++)
			if (g->mem[pl->point_ids[j]].e >= g->njoin)
				return pl;
	}
	return NULL;
}

/*
 * Reports the joining events' points of refused patch pl: 0, or -errno
 * with msg when one of them may not be left out (dpd_point.optional).
 */
static int refuse(const struct group *g, const struct dp_patch *pl, struct dp_err *msg)
{
	int err = 0;

	for (unsigned j = 0; j < pl->npoints; j++) {
		const struct member *m = &g->mem[pl->point_ids[j]];
		const struct dpd_event *ev = g->evs[m->e];

		if (m->e < g->njoin && !ev->points[m->k].optional)
			return dp_err_set(msg, -ENOTSUP, "%s at 0x%" PRIx64 " of %s cannot be "
					  "placed: %s", dpd_event_point_name(ev, &ev->points[m->k]),
					  pl->points[j], ev->path, dp_reason_str(pl->reason));
	}
	for (uint32_t e = 0; e < g->njoin; e++) {
		const struct dp_patch *sh = share_of(g, e, pl, &err);
		struct dpd_owner o = { g->evs[e], sh, g->bias };

		if (err)
			return dp_err_set(msg, err, "out of memory");
		if (sh)
			dpd_report_refused(&o, g->rps[e], pl->reason, NULL);
	}
	return 0;
}

/*
 * Whether a thread in the trampoline of replaced patch s could go back to
 * a byte of the works other than a window's first: its way back is the
 * window's end.
 */
static bool way_back_covered(const struct dpd_site *s, const struct dpd_work *ws, size_t n)
{
	uint64_t back = s->patch.site + s->patch.len;

	if (s->patch.method == DP_APP_METHOD_INT3)
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct dp_app_patch *ap = &ws[i].rec.patch;

		if ((back > ap->site && back < ap->site + ap->len) ||
		    (back >= ap->hop && back < ap->hop + ap->hop_len))
			return true;
	}
	return false;
}

/* Steps 3 to 7 for the group's works and replaced patches. */
static int apply(struct group *g, struct dpd_work *ws, size_t n, const uint32_t *gone,
		 size_t ngone, struct dp_err *msg)
{
	struct dpd_proc *p = g->p;
	pid_t pid = p->pid;
	int ret = dpd_stage(p, ws, n, msg);

	for (size_t i = 0; !ret && i < n; i++)
		if (ws[i].fail)
			ret = dp_err_set(msg, -ENOTSUP, "the patch at 0x%" PRIx64 " planned for "
					 "the probes together cannot be made (see the daemon's "
					 "log)", ws[i].rec.patch.site);
	if (!ret) {
		dpd_fault("combined");
		ret = dpd_write_batch(p, ws, n, gone, ngone, true, msg);
	}
	p = dpd_proc_find(pid);
	if (!p)
		return ret ? ret : -ESRCH;
	if (ret) {
		for (size_t i = 0; i < n; i++)
			dpd_work_unnote(p, &ws[i]);
		/* A new window at a replaced patch's site took its note. */
		for (size_t k = 0; k < ngone && p->fd >= 0; k++) {
			if (p->sites[gone[k]].installed)
				dpd_site_renote(p, &p->sites[gone[k]]);
		}
		return ret;
	}
	for (size_t k = 0; k < ngone; k++) {
		const struct dpd_site *s = &p->sites[gone[k]];
		struct dp_err ignored;
		bool renoted = false;

		for (size_t i = 0; i < n; i++)
			renoted |= ws[i].rec.patch.site == s->patch.site;
		if (!renoted && p->fd >= 0)
			dpd_agent_note_removed(p, s->patch.site, &ignored);
	}
	for (size_t i = 0; i < n; i++)
		if (dpd_work_record(p, &ws[i]))
			dpd_err("process %d: out of memory recording a patch", (int)pid);
	return 0;
}

/* Makes the works of the group's plan and the list of patches that go,
 * then applies them. */
static int regroup(struct group *g, struct dp_err *msg)
{
	struct dpd_work *ws = calloc(g->nplan ? g->nplan : 1, sizeof(*ws));
	bool *kept = calloc(g->nsites ? g->nsites : 1, sizeof(*kept));
	uint32_t *gone = calloc(g->nsites ? g->nsites : 1, sizeof(*gone));
	const struct dp_patch *lost = lost_point(g);
	size_t n = 0, ngone = 0;
	int ret = 0;

	if (!ws || !kept || !gone) {
		ret = dp_err_set(msg, -ENOMEM, "out of memory");
		goto out;
	}
	if (lost) {
		ret = dp_err_set(msg, -EBUSY, "planned together with the others, the probe at "
				 "0x%" PRIx64 " of %s would be refused: %s", lost->points[0],
				 g->evs[0]->path, dp_reason_str(lost->reason));
		goto out;
	}
	for (size_t i = 0; i < g->nplan; i++) {
		if (g->plan[i].method == DP_SITE_REFUSED) {
			ret = refuse(g, &g->plan[i], msg);
			if (ret)
				goto out;
			continue;
		}
		ret = make_work(g, &g->plan[i], &ws[n], kept, msg);
		if (ret < 0)
			goto out;
		n += (size_t)ret;
		ret = 0;
	}
	for (size_t k = 0; k < g->nsites; k++) {
		const struct dpd_site *s = &g->p->sites[g->sites[k]];

		if (kept[k])
			continue;
		if (way_back_covered(s, ws, n)) {
			ret = dp_err_set(msg, -EBUSY, "the probes cannot be planned together here: "
					 "a thread in the trampoline of the patch at 0x%" PRIx64
					 " would go back inside the new window", s->patch.site);
			goto out;
		}
		gone[ngone++] = g->sites[k];
	}
	dpd_info("process %d: %zu patches replaced by %zu planned together for %zu events",
		 (int)g->p->pid, ngone, n, g->nev);
	ret = apply(g, ws, n, gone, ngone, msg);
	for (size_t i = 0; !ret && i < n; i++)
		for (uint32_t k = 0; k < ws[i].rec.nowners; k++)
			if (ws[i].rps[k])
				dpd_report_installed(&ws[i].rec.owners[k], ws[i].rps[k]);
out:
	for (size_t i = 0; i < n; i++)
		free(ws[i].code);
	free(ws);
	free(kept);
	free(gone);
	return ret;
}

/* The room of a group for the events and points it may take in: those
 * joining (not listed yet) and every listed one. */
static int group_init(struct group *g, struct dpd_proc *p, struct dpd_event *const *join,
		      size_t njoin)
{
	size_t nev = njoin, npts = 0;

	memset(g, 0, sizeof(*g));
	g->p = p;
	for (size_t e = 0; e < njoin; e++)
		npts += join[e]->npoints;
	for (const struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		nev++;
		npts += ev->npoints;
	}
	g->evs = calloc(nev + 1, sizeof(*g->evs));
	g->rps = calloc(nev + 1, sizeof(*g->rps));
	g->sites = calloc(p->nsites + 1, sizeof(*g->sites));
	g->mem = calloc(npts + 1, sizeof(*g->mem));
	g->vaddrs = calloc(npts + 1, sizeof(*g->vaddrs));
	return g->evs && g->rps && g->sites && g->mem && g->vaddrs ? 0 : -ENOMEM;
}

static void group_release(struct group *g)
{
	free(g->evs);
	free(g->rps);
	free(g->sites);
	free(g->mem);
	free(g->vaddrs);
	free(g->plan);
}

/* After the group is gathered (ret: how that went, < 0 a failure): the
 * joint plan, then the one stop that puts it in place; the group freed. */
static int group_finish(struct group *g, int ret, struct dp_err *msg)
{
	if (ret >= 0)
		ret = plan_group(g, msg);
	if (!ret)
		ret = regroup(g, msg);
	group_release(g);
	return ret;
}

int dpd_combine_install(struct dpd_proc *p, struct dpd_event *const *evs, size_t nev,
			uint64_t bias, struct dp_client_proc *const *rps, struct dp_err *msg)
{
	struct group g;
	int ret = group_init(&g, p, evs, nev);

	if (ret) {
		ret = dp_err_set(msg, ret, "out of memory");
		goto out;
	}
	g.bias = bias;
	for (size_t e = 0; e < nev && !ret; e++) {
		ret = add_event(&g, evs[e], msg);
		g.rps[e] = rps[e];
		for (size_t i = 0; !ret && i < evs[e]->nplan; i++)
			for (unsigned k = 0; k < evs[e]->plan[i].npoints; k++)
				add_point(&g, (uint32_t)e, (uint32_t)evs[e]->plan[i].point_ids[k]);
	}
	g.njoin = g.nev;
	for (size_t e = 0; ret >= 0 && e < nev; e++)
		ret = take_met(&g, evs[e]->plan, evs[e]->nplan, msg);
out:
	return group_finish(&g, ret, msg);
}

/*
 * A removal whose joint plan is refused (the new windows would catch a
 * thread on its way back from a replaced trampoline, a point would no
 * longer fit): every patch of the group gets its original bytes back, which
 * is always possible, and the other events are put back with a fresh joint
 * plan.  Their points are out between the two stops; one that cannot be put
 * back stays out, said in the log, never left half-patched.
 */
static int remove_all_then_readd(struct group *g, struct dp_err *msg)
{
	struct dpd_event *others[DPD_SITE_MAX_OWNERS * 4];
	struct dp_client_proc *none[DPD_SITE_MAX_OWNERS * 4] = { NULL };
	struct dpd_proc *p = g->p;
	pid_t pid = p->pid;
	size_t n = 0;
	int ret;

	for (size_t e = 0; e < g->nev; e++) {
		if (g->evs[e] == g->leave)
			continue;
		if (n == sizeof(others) / sizeof(others[0])) {
			dpd_err("process %d: more events than %zu share these patches: the others "
				"are not put back", (int)pid, n);
			break;
		}
		others[n++] = g->evs[e];
	}
	dpd_info("process %d: %s", (int)pid, msg->msg);
	dp_err_clear(msg);
	ret = apply(g, NULL, 0, g->sites, g->nsites, msg);
	if (ret || !n)
		return ret;
	p = dpd_proc_find(pid);
	if (!p)
		return -ESRCH;
	if (dpd_combine_install(p, others, n, g->bias, none, msg))
		dpd_err("process %d: the probes taken out with another event's could not be "
			"put back: %s", (int)pid, msg->msg);
	dp_err_clear(msg);
	return 0;
}

int dpd_combine_remove(struct dpd_proc *p, const struct dpd_event *ev, struct dp_err *msg)
{
	struct group g;
	int ret = group_init(&g, p, NULL, 0);

	if (ret) {
		ret = dp_err_set(msg, ret, "out of memory");
		goto out;
	}
	g.leave = ev;
	g.evs[g.nev++] = (struct dpd_event *)ev;	/* the object of the group */
	for (uint32_t i = 0; !ret && i < p->nsites; i++) {
		const struct dpd_site *s = &p->sites[i];

		if (s->installed && dpd_site_owned(s, ev)) {
			g.bias = s->owners[0].bias;
			ret = add_site(&g, i, msg);
		}
	}
	/* ev has no point in the union: it only named the object. */
	if (!ret)
		ret = plan_group(&g, msg);
	if (!ret)
		ret = regroup(&g, msg);
	if (ret == -EBUSY || ret == -ENOTSUP)
		ret = remove_all_then_readd(&g, msg);
out:
	group_release(&g);
	return ret;
}

bool dpd_combined(const struct dpd_proc *p, const struct dpd_event *ev)
{
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dpd_site *s = &p->sites[i];

		if (!s->installed || !dpd_site_owned(s, ev))
			continue;
		for (uint32_t o = 0; o < s->nowners; o++) {
			const struct dpd_event *oe = s->owners[o].ev;
			const struct dp_patch *pl = s->owners[o].pl;

			if (pl < oe->plan || pl >= oe->plan + oe->nplan)
				return true;
		}
	}
	return false;
}
